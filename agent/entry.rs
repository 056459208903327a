//! Every exported (`Agent_OnLoad`, `Agent_OnAttach`, `Agent_OnUnload`) and registered (JVMTI
//! callbacks, `dev.jfrctx.agent.Natives`) symbol of the agent lives here. Each one fences panics
//! and turns failures into a logged line or a Java exception; the work happens in `agent`.

use crate::jvm::jvmti::{sys as jvmti_sys, Jvmti};
use crate::jvm::stream::NativeFns;
use crate::runtime::{agent, faults, natives};
use jni::errors::{Error as JniError, ThrowRuntimeExAndDefault};
use jni::objects::{JByteArray, JByteBuffer, JClass, JLongArray, JObject, JObjectArray, JString};
use jni::strings::JNIString;
use jni::sys::{jboolean, jint, jlong, JNIEnv, JavaVM, JNI_ERR, JNI_OK};
use jni::{jni_sig, jni_str, Env, EnvUnowned, Outcome};
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs `f`, turning a panic into a logged internal error and `fallback`.
fn fenced<T>(what: &str, fallback: T, f: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            crate::error!(
                "internal error in {what} ({}); the agent keeps the JVM running",
                faults::take_panic()
            );
            fallback
        }
    }
}

/// Runs `f` with an `Env` for a raw JNIEnv pointer handed to a JVMTI callback, logging errors
/// and panics instead of letting them cross the FFI boundary.
///
/// # Safety
/// `jni_env` must be the current thread's valid JNIEnv, as JVMTI passes to callbacks.
unsafe fn with_callback_env(
    what: &str,
    jni_env: *mut JNIEnv,
    f: impl FnOnce(&mut Env<'_>) -> Result<(), String>,
) {
    if jni_env.is_null() {
        crate::error!("{what}: no JNI environment");
        return;
    }
    // SAFETY: the caller guarantees jni_env is this thread's live JNIEnv for the callback.
    let mut unowned = unsafe { EnvUnowned::from_raw(jni_env) };
    let outcome = unowned
        .with_env(|env| -> Result<Result<(), String>, JniError> { Ok(f(env)) })
        .into_outcome();
    match outcome {
        Outcome::Ok(Ok(())) => {}
        Outcome::Ok(Err(msg)) => crate::error!("{what}: {msg}"),
        Outcome::Err(e) => crate::error!("{what}: {e}"),
        Outcome::Panic(_) => crate::error!(
            "internal error in {what} ({}); the agent keeps the JVM running",
            faults::take_panic()
        ),
    }
}

/// Loaded with `-agentpath:libjfrctx.so=OPTIONS`. A bad option prints one `jfrctx:` line and
/// returns JNI_ERR, so the JVM does not start.
///
/// # Safety
/// Called by the JVM with a valid `vm` and a NUL-terminated (or null) `options` string.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnLoad(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    let opts = if options.is_null() {
        String::new()
    } else {
        // SAFETY: the JVM passes a NUL-terminated string that lives for this call.
        unsafe { CStr::from_ptr(options) }
            .to_string_lossy()
            .into_owned()
    };
    let result = fenced(
        "Agent_OnLoad",
        Err::<(), String>("internal error during load".into()),
        || {
            // SAFETY: vm is the JavaVM passed to Agent_OnLoad.
            let jvmti = unsafe { Jvmti::from_vm(vm) }?;
            agent::load(&opts, &jvmti).map_err(|e| e.to_string())?;
            jvmti.install(vm_init, vm_death, thread_end)?;
            // SAFETY: vm is the JavaVM passed to Agent_OnLoad.
            if let Err(e) = unsafe { record_non_safepoint_debug_info(vm) } {
                crate::warn!(
                    "{e}: a sample in inlined code may be attributed to a neighbouring method, \
                     and get its context (add -XX:+UnlockDiagnosticVMOptions \
                     -XX:+DebugNonSafepoints)"
                );
            }
            Ok(())
        },
    );
    match result {
        Ok(()) => JNI_OK,
        Err(msg) => {
            eprintln!("jfrctx: {msg}");
            JNI_ERR
        }
    }
}

/// Makes HotSpot keep debug information for every pc of compiled code, not only at safepoints.
///
/// Without it, JFR attributes a sample taken anywhere in compiled code to the nearest safepoint's
/// debug information; with inlining, that can belong to a neighbouring inlined method that ran
/// under another context, and the sample then shows a method with a context it never had
/// (scripts/soak.sh measured about 1 in 7 000 samples on JDK 17, 1 in 2 000 on JDK 25; none with
/// `-XX:+DebugNonSafepoints`). HotSpot records non-safepoint debug information whenever an agent
/// has CompiledMethodLoad events enabled: a second JVMTI environment of this agent enables them,
/// with a callback that does nothing. Called from `Agent_OnLoad`, before anything is compiled.
///
/// # Safety
/// `vm` must be the `JavaVM*` passed to `Agent_OnLoad`.
unsafe fn record_non_safepoint_debug_info(vm: *mut JavaVM) -> Result<(), String> {
    let mut env: *mut c_void = std::ptr::null_mut();
    // SAFETY: the caller guarantees `vm` is the live JavaVM; GetEnv is callable in OnLoad.
    let rc = unsafe { ((**vm).v1_4.GetEnv)(vm, &mut env, jvmti_sys::JVMTI_VERSION_1_2 as jint) };
    if rc != JNI_OK || env.is_null() {
        return Err(format!(
            "no second JVMTI environment (GetEnv returned {rc})"
        ));
    }
    let env = env as *mut jvmti_sys::jvmtiEnv;
    // SAFETY: `env` came from GetEnv; its function table lives as long as the VM.
    let table = unsafe { &**env };
    let failed = |what: &str, err: jvmti_sys::jvmtiError| format!("JVMTI {what} failed ({err})");
    let mut caps = jvmti_sys::jvmtiCapabilities::default();
    caps.set_can_generate_compiled_method_load_events(1);
    let add = table.AddCapabilities.ok_or("no AddCapabilities")?;
    // SAFETY: valid env, a capabilities struct we own.
    let err = unsafe { add(env, &caps) };
    if err != jvmti_sys::JVMTI_ERROR_NONE {
        return Err(failed(
            "AddCapabilities(can_generate_compiled_method_load_events)",
            err,
        ));
    }
    let callbacks = jvmti_sys::jvmtiEventCallbacks {
        CompiledMethodLoad: Some(compiled_method_load),
        ..Default::default()
    };
    let set = table.SetEventCallbacks.ok_or("no SetEventCallbacks")?;
    let size = std::mem::size_of::<jvmti_sys::jvmtiEventCallbacks>() as jint;
    // SAFETY: valid env; the VM copies the struct; size is the struct's own.
    let err = unsafe { set(env, &callbacks, size) };
    if err != jvmti_sys::JVMTI_ERROR_NONE {
        return Err(failed("SetEventCallbacks", err));
    }
    let mode = table
        .SetEventNotificationMode
        .ok_or("no SetEventNotificationMode")?;
    let event = jvmti_sys::JVMTI_EVENT_COMPILED_METHOD_LOAD;
    // SAFETY: valid env; a null thread means all threads, as the spec allows for this event.
    let err = unsafe { mode(env, jvmti_sys::JVMTI_ENABLE, event, std::ptr::null_mut()) };
    if err != jvmti_sys::JVMTI_ERROR_NONE {
        return Err(failed("SetEventNotificationMode(CompiledMethodLoad)", err));
    }
    Ok(())
}

/// CompiledMethodLoad: only enabled for its side effect (see `record_non_safepoint_debug_info`).
unsafe extern "C" fn compiled_method_load(
    _jvmti: *mut jvmti_sys::jvmtiEnv,
    _method: jni::sys::jmethodID,
    _code_size: jint,
    _code_addr: *const c_void,
    _map_length: jint,
    _map: *const jvmti_sys::jvmtiAddrLocationMap,
    _compile_info: *const c_void,
) {
}

/// Dynamic attach is not supported: context must be recorded from the start.
///
/// # Safety
/// Called by the JVM; no argument is dereferenced.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnAttach(
    _vm: *mut JavaVM,
    _options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    eprintln!("jfrctx: dynamic attach is not supported; start the JVM with -agentpath");
    JNI_ERR
}

/// Nothing to do: VMDeath already finished the sinks.
#[no_mangle]
pub extern "C" fn Agent_OnUnload(_vm: *mut JavaVM) {}

unsafe extern "C" fn vm_init(
    _jvmti: *mut jvmti_sys::jvmtiEnv,
    jni_env: *mut JNIEnv,
    _thread: jvmti_sys::jthread,
) {
    let fns = NativeFns {
        intern: native_intern as *mut c_void,
        register: native_register as *mut c_void,
        register_address: native_register_address as *mut c_void,
        release: native_release as *mut c_void,
        grow: native_grow as *mut c_void,
        grow_address: native_grow_address as *mut c_void,
        spare_queue: native_spare_queue as *mut c_void,
        deliver: native_deliver as *mut c_void,
        set_filter: native_set_filter as *mut c_void,
        set_listening: native_set_listening as *mut c_void,
        poll_samples: native_poll_samples as *mut c_void,
        wake: native_wake as *mut c_void,
        wake_word: native_wake_word as *mut c_void,
    };
    // SAFETY: JVMTI passes the VMInit thread's live JNIEnv.
    unsafe {
        with_callback_env("VMInit", jni_env, |env| {
            agent::on_vm_init(env, &fns).map_err(|e| e.to_string())
        })
    }
}

unsafe extern "C" fn vm_death(_jvmti: *mut jvmti_sys::jvmtiEnv, jni_env: *mut JNIEnv) {
    // SAFETY: JVMTI passes the VMDeath thread's live JNIEnv.
    unsafe { with_callback_env("VMDeath", jni_env, agent::on_vm_death) }
}

/// ThreadEnd (platform threads): the thread's ring, if it has one, is released right away
/// instead of when the facade's Cleaner notices (which waits for a GC).
unsafe extern "C" fn thread_end(
    _jvmti: *mut jvmti_sys::jvmtiEnv,
    jni_env: *mut JNIEnv,
    thread: jvmti_sys::jthread,
) {
    if thread.is_null() || !natives::wants_thread_end() {
        return;
    }
    // SAFETY: JVMTI passes the ending thread's live JNIEnv and a live local reference to it.
    unsafe {
        with_callback_env("ThreadEnd", jni_env, |env| {
            // SAFETY: `thread` is a valid local reference for the duration of the callback.
            let t = JObject::from_raw(env, thread);
            let id = env
                .call_method(&t, jni_str!("getId"), jni_sig!("()J"), &[])
                .and_then(|v| v.j())
                .map_err(|e| e.to_string())?;
            natives::thread_ended(id);
            Ok(())
        })
    }
}

fn throw_illegal_argument(env: &mut Env<'_>, msg: &str) -> Result<(), JniError> {
    env.throw_new(
        jni_str!("java/lang/IllegalArgumentException"),
        JNIString::from(msg),
    )
}

/// `Natives.intern(String[] kv, long[] released)`.
extern "system" fn native_intern<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    kv: JObjectArray<'l, JString<'l>>,
    released: JLongArray<'l>,
) -> jlong {
    unowned
        .with_env(|env| -> Result<jlong, JniError> {
            let mut ids = Vec::new();
            if !released.is_null() {
                let n = released.len(env)?;
                ids.resize(n, 0);
                released.get_region(env, 0, &mut ids)?;
            }
            let n = if kv.is_null() { 0 } else { kv.len(env)? };
            let mut entries = Vec::with_capacity(n / 2);
            for i in (0..n / 2 * 2).step_by(2) {
                let pair = env.with_local_frame(4, |env| -> Result<_, JniError> {
                    let k = kv.get_element(env, i)?;
                    let v = kv.get_element(env, i + 1)?;
                    if k.is_null() || v.is_null() {
                        return Ok(None);
                    }
                    Ok(Some((k.try_to_string(env)?, v.try_to_string(env)?)))
                })?;
                match pair {
                    Some(p) => entries.push(p),
                    None => {
                        throw_illegal_argument(env, "jfrctx: null key or value")?;
                        return Ok(0);
                    }
                }
            }
            if n % 2 != 0 {
                throw_illegal_argument(env, "jfrctx: odd key/value array")?;
                return Ok(0);
            }
            match natives::intern(entries, &ids) {
                Ok(id) => Ok(id as jlong),
                Err(msg) => {
                    throw_illegal_argument(env, &format!("jfrctx: {msg}"))?;
                    Ok(0)
                }
            }
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.register(long javaThreadId, int capacity)`.
extern "system" fn native_register<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    thread_id: jlong,
    capacity: jint,
) -> JObject<'l> {
    unowned
        .with_env(|env| -> Result<JObject<'l>, JniError> {
            let Some((ptr, len, handle)) = natives::register(thread_id, capacity) else {
                return Ok(JObject::null());
            };
            // The ring memory stays allocated until the agent has seen its release (after its
            // owner is gone) and the retention has passed: it outlives every write through it.
            // SAFETY: (ptr, len) is that live ring memory, as the comment above says.
            let buffer = unsafe { direct_buffer(env, ptr, len) };
            if buffer.is_null() {
                natives::release(handle as i64); // the Java side never held it
            }
            Ok(buffer)
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// A direct `ByteBuffer` over `len` bytes at `ptr` through the raw `NewDirectByteBuffer`: null
/// when it fails, its exception left pending for the Java caller (a StackOverflowError at the
/// end of a deep stack, an OutOfMemoryError). Not `Env::new_direct_byte_buffer`: on failure it
/// clears the exception and matches its class, and that lookup calls into Java, which at the end
/// of the stack fails the same way — the matching recurses until the native stack overflows and
/// the JVM dies (jni 0.22.4, `LoaderContext::load_class`).
///
/// # Safety
/// `ptr` must point to `len` bytes that stay allocated while the buffer can be reached.
unsafe fn direct_buffer<'l>(env: &mut Env<'l>, ptr: *mut u8, len: usize) -> JObject<'l> {
    let raw = env.get_raw();
    // SAFETY: `raw` is this thread's live JNIEnv (the native method's own); NewDirectByteBuffer
    // exists since JNI 1.4 and returns a new local reference or null with an exception pending;
    // the memory's lifetime is the caller's guarantee.
    unsafe {
        let obj = ((**raw).v1_4.NewDirectByteBuffer)(raw, ptr.cast(), len as jlong);
        if obj.is_null() {
            JObject::null()
        } else {
            JObject::from_raw(env, obj)
        }
    }
}

/// `Natives.registerAddress(long javaThreadId, int capacity)`: `register`'s ring as its address
/// (0: not running), for the facade's ring writer; no Java object is made.
extern "system" fn native_register_address<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    thread_id: jlong,
    capacity: jint,
) -> jlong {
    unowned
        .with_env(|_env| -> Result<jlong, JniError> {
            // The memory outlives every write through it, as for `register`.
            Ok(natives::register(thread_id, capacity).map_or(0, |(ptr, ..)| ptr as jlong))
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.grow(long handle, int capacity)`: the bigger ring as a buffer, made before the agent
/// moves to it (no buffer, no move: the thread keeps writing the old ring, which is still read).
extern "system" fn native_grow<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    capacity: jint,
) -> JObject<'l> {
    unowned
        .with_env(|env| -> Result<JObject<'l>, JniError> {
            let mut buffer = JObject::null();
            natives::grow(handle, capacity, |ptr, len| {
                // SAFETY: as for `register`: the new ring stays allocated until its release (or
                // its thread's end) and the retention time have passed.
                buffer = unsafe { direct_buffer(env, ptr, len) };
                !buffer.is_null()
            });
            Ok(buffer)
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.growAddress(long handle, int capacity)`: `grow`'s ring as its address (0: refused),
/// for the facade's ring writer; no Java object is made, so nothing can fail half-way.
extern "system" fn native_grow_address<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
    capacity: jint,
) -> jlong {
    unowned
        .with_env(|_env| -> Result<jlong, JniError> {
            // The memory outlives every write through it, as for `register`.
            Ok(natives::grow(handle, capacity, |_, _| true).map_or(0, |(ptr, _)| ptr as jlong))
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.spareQueue()`: the spare queue's address, 0 with `spares=off`.
extern "system" fn native_spare_queue<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> jlong {
    unowned
        .with_env(|_env| -> Result<jlong, JniError> {
            // The queue lives as long as the agent; a spare's memory stays allocated until the
            // agent has seen its claimer's release and drained it (as for `register`), and Java
            // writes it only after taking and claiming it.
            Ok(natives::spare_queue())
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.wakeWord()`: the worker's long-sleep word as a direct buffer (null with an exception
/// pending when the buffer cannot be made).
extern "system" fn native_wake_word<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
) -> JObject<'l> {
    unowned
        .with_env(|env| -> Result<JObject<'l>, JniError> {
            let (ptr, len) = natives::wake_word();
            // SAFETY: (ptr, len) is a static atomic word: allocated for the whole process.
            Ok(unsafe { direct_buffer(env, ptr, len) })
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.wake()`: a thread reached a half lap while the worker slept long; it runs a round
/// now.
extern "system" fn native_wake<'l>(mut unowned: EnvUnowned<'l>, _class: JClass<'l>) {
    unowned
        .with_env(|_env| -> Result<(), JniError> {
            natives::wake();
            Ok(())
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.release(long handle)`.
extern "system" fn native_release<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    handle: jlong,
) {
    unowned
        .with_env(|_env| -> Result<(), JniError> {
            natives::release(handle);
            Ok(())
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.deliver(ByteBuffer batch, int length)`: copies the bytes and queues them.
extern "system" fn native_deliver<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    batch: JByteBuffer<'l>,
    length: jint,
) {
    unowned
        .with_env(|env| -> Result<(), JniError> {
            let ptr = env.get_direct_buffer_address(&batch)?;
            let cap = env.get_direct_buffer_capacity(&batch)?;
            let len = usize::try_from(length).unwrap_or(0).min(cap);
            if ptr.is_null() || len == 0 {
                return Ok(());
            }
            // SAFETY: ptr/cap describe the direct buffer's live memory; len ≤ cap; the bridge
            // does not touch the buffer until this call returns.
            let bytes = unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec();
            natives::deliver(bytes);
            Ok(())
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.setFilter(String spec)`: null or blank removes the filter; a bad spec throws
/// `IllegalArgumentException` and leaves the filter as it was.
extern "system" fn native_set_filter<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    spec: JString<'l>,
) {
    unowned
        .with_env(|env| -> Result<(), JniError> {
            let spec = if spec.is_null() {
                None
            } else {
                Some(spec.try_to_string(env)?)
            };
            if let Err(msg) = natives::set_filter(spec.as_deref()) {
                throw_illegal_argument(env, &format!("jfrctx: bad filter: {msg}"))?;
            }
            Ok(())
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.setListening(boolean on, long listenerThreadId)`.
extern "system" fn native_set_listening<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    on: jboolean,
    listener_thread: jlong,
) {
    unowned
        .with_env(|_env| -> Result<(), JniError> {
            natives::set_listening(on, listener_thread);
            Ok(())
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}

/// `Natives.pollSamples(long timeoutMillis)`: the next listener batch as a `byte[]`, or null
/// after the timeout (clamped to 0..=1000 ms). Blocks in native code, so it never holds up a
/// safepoint.
extern "system" fn native_poll_samples<'l>(
    mut unowned: EnvUnowned<'l>,
    _class: JClass<'l>,
    timeout_ms: jlong,
) -> JByteArray<'l> {
    unowned
        .with_env(|env| -> Result<JByteArray<'l>, JniError> {
            let timeout = std::time::Duration::from_millis(timeout_ms.clamp(0, 1000) as u64);
            match natives::poll_samples(timeout) {
                Some(bytes) => env.byte_array_from_slice(&bytes),
                None => Ok(JByteArray::null()),
            }
        })
        .resolve::<ThrowRuntimeExAndDefault>()
}
