//! The JFR stream bridge: defines the bridge classes embedded in this library into the bootstrap
//! class loader, registers their natives, and starts/stops the `RecordingStream` through JNI.
//!
//! The bridge classes (`java/bridge/dev/jfrctx/agent/*.java`) travel inside the `.so`: they are
//! compiled by `build.rs` and defined at VMInit, so the agent works without anything on the
//! application's class path. The facade jar finds `dev.jfrctx.agent.Natives` reflectively.

use jni::objects::{JClassLoader, JString, JValue};
use jni::strings::JNIStr;
use jni::{jni_sig, jni_str, Env, NativeMethod};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/bridge_classes.rs"));
}

/// Raw function pointers of the natives, supplied by `entry.rs` (the home of every exported or
/// registered symbol).
pub struct NativeFns {
    pub intern: *mut std::ffi::c_void,
    pub register: *mut std::ffi::c_void,
    pub release: *mut std::ffi::c_void,
    pub deliver: *mut std::ffi::c_void,
}

const BRIDGE: &JNIStr = jni_str!("dev/jfrctx/agent/StreamBridge");
const NATIVES: &JNIStr = jni_str!("dev/jfrctx/agent/Natives");

/// The event configuration handed to the bridge: one `NAME|key=value|...` line per event.
pub fn event_config(period_ns: i64) -> String {
    let period_ms = (period_ns as f64) / 1e6;
    format!("jdk.ExecutionSample|period={period_ms} ms\n")
}

/// Defines the bridge classes, registers the natives and starts the stream.
pub fn start(env: &mut Env<'_>, events: &str, fns: &NativeFns) -> Result<(), String> {
    define_classes(env)?;
    register_natives(env, fns)?;
    let config = JString::from_str(env, events).map_err(|e| format!("{e}"))?;
    let result = env
        .call_static_method(
            BRIDGE,
            jni_str!("start"),
            jni_sig!("(Ljava/lang/String;)Ljava/lang/String;"),
            &[JValue::Object(&config)],
        )
        .and_then(|v| v.l())
        .map_err(|e| describe(env, "StreamBridge.start", e))?;
    if result.is_null() {
        Ok(())
    } else {
        let s = env
            .cast_local::<JString>(result)
            .map_err(|e| format!("{e}"))?;
        Err(s.try_to_string(env).unwrap_or_else(|e| format!("{e}")))
    }
}

/// Stops the stream and waits for its last delivery. Returns a problem description, if any.
pub fn stop(env: &mut Env<'_>, timeout_ms: i64) -> Option<String> {
    let result = env
        .call_static_method(
            BRIDGE,
            jni_str!("stop"),
            jni_sig!("(J)Ljava/lang/String;"),
            &[JValue::Long(timeout_ms)],
        )
        .and_then(|v| v.l());
    match result {
        Ok(obj) if obj.is_null() => None,
        Ok(obj) => Some(
            env.cast_local::<JString>(obj)
                .and_then(|s| s.try_to_string(env))
                .unwrap_or_else(|e| format!("{e}")),
        ),
        Err(e) => Some(describe(env, "StreamBridge.stop", e)),
    }
}

/// Turns a JNI error into one line, clearing (and describing) a pending Java exception.
fn describe(env: &mut Env<'_>, what: &str, err: jni::errors::Error) -> String {
    if let Some(ex) = env.exception_occurred() {
        env.exception_clear();
        let text = env
            .call_method(
                &ex,
                jni_str!("toString"),
                jni_sig!("()Ljava/lang/String;"),
                &[],
            )
            .and_then(|v| v.l())
            .and_then(|o| env.cast_local::<JString>(o))
            .and_then(|s| s.try_to_string(env))
            .unwrap_or_else(|_| "unknown exception".into());
        env.exception_clear();
        return format!("{what}: {text}");
    }
    format!("{what}: {err}")
}

fn define_classes(env: &mut Env<'_>) -> Result<(), String> {
    let boot = JClassLoader::null();
    for (name, bytes) in embedded::BRIDGE_CLASSES {
        env.define_class(None::<&JNIStr>, &boot, bytes)
            .map_err(|e| describe(env, &format!("cannot define bridge class {name}"), e))?;
    }
    Ok(())
}

fn register_natives(env: &mut Env<'_>, fns: &NativeFns) -> Result<(), String> {
    // SAFETY: each pointer comes from entry.rs and is an `extern "system"` function whose
    // parameters and return type match the JNI signature it is registered under.
    let methods = unsafe {
        [
            NativeMethod::from_raw_parts(
                jni_str!("intern"),
                jni_str!("([Ljava/lang/String;[J)J"),
                fns.intern,
            ),
            NativeMethod::from_raw_parts(
                jni_str!("register"),
                jni_str!("(JI)Ljava/nio/ByteBuffer;"),
                fns.register,
            ),
            NativeMethod::from_raw_parts(jni_str!("release"), jni_str!("(J)V"), fns.release),
            NativeMethod::from_raw_parts(
                jni_str!("deliver"),
                jni_str!("(Ljava/nio/ByteBuffer;I)V"),
                fns.deliver,
            ),
        ]
    };
    // SAFETY: the descriptors above are valid for the Natives class's declared methods.
    unsafe { env.register_native_methods(NATIVES, &methods) }
        .map_err(|e| describe(env, "cannot register natives", e))
}
