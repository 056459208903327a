//! A small safe wrapper over the few JVMTI functions the agent uses: obtaining the environment,
//! reading a system property during OnLoad, setting event callbacks and enabling events.

pub mod sys;

use jni::sys::{jint, JavaVM, JNI_OK};
use std::ffi::{CStr, CString};
use std::ptr;

/// Callback types the agent installs.
pub type VmInitFn = unsafe extern "C" fn(*mut sys::jvmtiEnv, *mut jni::sys::JNIEnv, sys::jthread);
pub type VmDeathFn = unsafe extern "C" fn(*mut sys::jvmtiEnv, *mut jni::sys::JNIEnv);
pub type ThreadEndFn =
    unsafe extern "C" fn(*mut sys::jvmtiEnv, *mut jni::sys::JNIEnv, sys::jthread);

/// A JVMTI environment pointer, valid for the life of the VM.
#[derive(Clone, Copy)]
pub struct Jvmti(*mut sys::jvmtiEnv);

// SAFETY: a jvmtiEnv pointer is valid on every thread for the life of the VM (unlike a JNIEnv,
// JVMTI environments are not thread-local), and this wrapper holds nothing else.
unsafe impl Send for Jvmti {}
// SAFETY: as above; all calls through it are thread-safe JVMTI functions.
unsafe impl Sync for Jvmti {}

impl Jvmti {
    /// Obtains a JVMTI 1.2 environment from the VM.
    ///
    /// # Safety
    /// `vm` must be the `JavaVM*` passed to `Agent_OnLoad`.
    pub unsafe fn from_vm(vm: *mut JavaVM) -> Result<Jvmti, String> {
        let mut env: *mut std::ffi::c_void = ptr::null_mut();
        // SAFETY: the caller guarantees `vm` is a live JavaVM; GetEnv is callable in any phase.
        let rc = unsafe {
            let get_env = (**vm).v1_4.GetEnv;
            get_env(vm, &mut env, sys::JVMTI_VERSION_1_2 as jint)
        };
        if rc != JNI_OK || env.is_null() {
            return Err(format!(
                "cannot obtain a JVMTI environment (GetEnv returned {rc})"
            ));
        }
        Ok(Jvmti(env as *mut sys::jvmtiEnv))
    }

    fn table(&self) -> &sys::jvmtiInterface_1_ {
        // SAFETY: self.0 came from GetEnv and points at a function table that lives as long as
        // the VM.
        unsafe { &**self.0 }
    }

    fn check(&self, what: &str, err: sys::jvmtiError) -> Result<(), String> {
        if err == sys::JVMTI_ERROR_NONE {
            Ok(())
        } else {
            Err(format!("JVMTI {what} failed with error {err}"))
        }
    }

    /// Reads a VM system property (valid in the OnLoad and live phases).
    pub fn system_property(&self, name: &str) -> Option<String> {
        let cname = CString::new(name).ok()?;
        let mut value: *mut std::os::raw::c_char = ptr::null_mut();
        let f = self.table().GetSystemProperty?;
        // SAFETY: valid env, NUL-terminated name, out-pointer to a local.
        let err = unsafe { f(self.0, cname.as_ptr(), &mut value) };
        if err != sys::JVMTI_ERROR_NONE || value.is_null() {
            return None;
        }
        // SAFETY: JVMTI returned a NUL-terminated modified-UTF-8 string it allocated.
        let s = unsafe { CStr::from_ptr(value) }
            .to_string_lossy()
            .into_owned();
        if let Some(dealloc) = self.table().Deallocate {
            // SAFETY: `value` was allocated by JVMTI and is released exactly once.
            unsafe { dealloc(self.0, value as *mut u8) };
        }
        Some(s)
    }

    /// Installs the VMInit, VMDeath and ThreadEnd callbacks and enables the three events.
    /// (ThreadEnd is posted for platform threads only.)
    pub fn install(
        &self,
        init: VmInitFn,
        death: VmDeathFn,
        thread_end: ThreadEndFn,
    ) -> Result<(), String> {
        let callbacks = sys::jvmtiEventCallbacks {
            VMInit: Some(init),
            VMDeath: Some(death),
            ThreadEnd: Some(thread_end),
            ..Default::default()
        };
        let set = self
            .table()
            .SetEventCallbacks
            .ok_or("no SetEventCallbacks")?;
        // SAFETY: valid env; the struct is copied by the VM; size is the struct's own.
        let err = unsafe {
            set(
                self.0,
                &callbacks,
                std::mem::size_of::<sys::jvmtiEventCallbacks>() as jint,
            )
        };
        self.check("SetEventCallbacks", err)?;
        for event in [
            sys::JVMTI_EVENT_VM_INIT,
            sys::JVMTI_EVENT_VM_DEATH,
            sys::JVMTI_EVENT_THREAD_END,
        ] {
            let mode = self
                .table()
                .SetEventNotificationMode
                .ok_or("no SetEventNotificationMode")?;
            // SAFETY: valid env; a null thread means "all threads", as the spec allows.
            let err = unsafe { mode(self.0, sys::JVMTI_ENABLE, event, ptr::null_mut()) };
            self.check("SetEventNotificationMode", err)?;
        }
        Ok(())
    }
}
