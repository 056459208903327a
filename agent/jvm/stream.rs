//! The JFR stream bridge: defines the bridge classes embedded in this library into the bootstrap
//! class loader, registers their natives, and starts/stops the `RecordingStream` through JNI.
//!
//! The bridge classes (`java/bridge/dev/jfrctx/agent/*.java`) travel inside the `.so`: they are
//! compiled by `build.rs` and defined at VMInit, so the agent works without anything on the
//! application's class path. The facade jar finds `dev.jfrctx.agent.Natives` reflectively.

use jni::objects::{JClassLoader, JObject, JString, JValue};
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
    pub register_address: *mut std::ffi::c_void,
    pub release: *mut std::ffi::c_void,
    pub grow: *mut std::ffi::c_void,
    pub grow_address: *mut std::ffi::c_void,
    pub spare_queue: *mut std::ffi::c_void,
    pub deliver: *mut std::ffi::c_void,
    pub set_filter: *mut std::ffi::c_void,
    pub set_listening: *mut std::ffi::c_void,
    pub poll_samples: *mut std::ffi::c_void,
    pub wake: *mut std::ffi::c_void,
    pub wake_word: *mut std::ffi::c_void,
}

const BRIDGE: &JNIStr = jni_str!("dev/jfrctx/agent/StreamBridge");
const NATIVES: &JNIStr = jni_str!("dev/jfrctx/agent/Natives");

// The event configuration handed to the bridge (one `NAME|key=value|...` line per event) is
// built by `crate::core::events::bridge_config` from the `events=`, `period=`, `throttle=` and
// `cpu_sampler=` options.

/// Defines the bridge classes, registers the natives and starts the stream.
pub fn start(env: &mut Env<'_>, events: &str, fns: &NativeFns) -> Result<(), String> {
    require_jfr(env)?;
    define_classes(env)?;
    if let Err(msg) = export_unsafe(env) {
        crate::warn!(
            "the ring writer is unavailable ({msg}); context switches are written through a \
             buffer view, which is slower"
        );
    }
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

/// A runtime without the `jdk.jfr` module (e.g. `jlink --add-modules java.base`) cannot run the
/// bridge: say so plainly, before defining anything (so the facade finds no `Natives` and stays
/// a no-op).
fn require_jfr(env: &mut Env<'_>) -> Result<(), String> {
    match env.find_class(jni_str!("jdk/jfr/FlightRecorder")) {
        Ok(class) => {
            env.delete_local_ref(class);
            Ok(())
        }
        Err(_) => {
            env.exception_clear();
            Err("this Java runtime has no jdk.jfr module".into())
        }
    }
}

fn define_classes(env: &mut Env<'_>) -> Result<(), String> {
    let boot = JClassLoader::null();
    for (name, bytes) in embedded::BRIDGE_CLASSES {
        let class = env
            .define_class(None::<&JNIStr>, &boot, bytes)
            .map_err(|e| describe(env, &format!("cannot define bridge class {name}"), e))?;
        // One local reference per class would outgrow VMInit's frame as the bridge grows
        // (`-Xcheck:jni` warns past 32): the class stays defined, the reference is not needed.
        env.delete_local_ref(class);
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
            NativeMethod::from_raw_parts(
                jni_str!("registerAddress"),
                jni_str!("(JI)J"),
                fns.register_address,
            ),
            NativeMethod::from_raw_parts(jni_str!("release"), jni_str!("(J)V"), fns.release),
            NativeMethod::from_raw_parts(
                jni_str!("grow"),
                jni_str!("(JI)Ljava/nio/ByteBuffer;"),
                fns.grow,
            ),
            NativeMethod::from_raw_parts(
                jni_str!("growAddress"),
                jni_str!("(JI)J"),
                fns.grow_address,
            ),
            NativeMethod::from_raw_parts(jni_str!("spareQueue"), jni_str!("()J"), fns.spare_queue),
            NativeMethod::from_raw_parts(
                jni_str!("deliver"),
                jni_str!("(Ljava/nio/ByteBuffer;I)V"),
                fns.deliver,
            ),
            NativeMethod::from_raw_parts(
                jni_str!("setFilter"),
                jni_str!("(Ljava/lang/String;)V"),
                fns.set_filter,
            ),
            NativeMethod::from_raw_parts(
                jni_str!("setListening"),
                jni_str!("(ZJ)V"),
                fns.set_listening,
            ),
            NativeMethod::from_raw_parts(
                jni_str!("pollSamples"),
                jni_str!("(J)[B"),
                fns.poll_samples,
            ),
            NativeMethod::from_raw_parts(jni_str!("wake"), jni_str!("()V"), fns.wake),
            NativeMethod::from_raw_parts(
                jni_str!("wakeWord"),
                jni_str!("()Ljava/nio/ByteBuffer;"),
                fns.wake_word,
            ),
        ]
    };
    // SAFETY: the descriptors above are valid for the Natives class's declared methods.
    unsafe { env.register_native_methods(NATIVES, &methods) }
        .map_err(|e| describe(env, "cannot register natives", e))
}

/// The warnings of `StreamBridge.start` (event types this JDK lacks), one line each.
pub fn warnings(env: &mut Env<'_>) -> Vec<String> {
    match call_string(env, jni_str!("warnings")) {
        Ok(Some(s)) => s.lines().map(str::to_string).collect(),
        Ok(None) => Vec::new(),
        Err(e) => vec![e],
    }
}

/// The event types the bridge enabled, comma-separated (for the log).
pub fn enabled_events(env: &mut Env<'_>) -> String {
    match call_string(env, jni_str!("enabledEvents")) {
        Ok(s) => s.unwrap_or_default(),
        Err(e) => e,
    }
}

/// Events the stream saw that `events=` did not select (other recordings' event types, or below
/// the agent's threshold), and the same by type (`"jdk.ThreadPark=1659, ..."`) for the log.
pub fn skipped_events(env: &mut Env<'_>) -> (u64, String) {
    let n = env
        .call_static_method(BRIDGE, jni_str!("skippedEvents"), jni_sig!("()J"), &[])
        .and_then(|v| v.j())
        .map_err(|e| describe(env, "StreamBridge.skippedEvents", e));
    let by_type = call_string(env, jni_str!("skippedByType"));
    match (n, by_type) {
        (Ok(n), Ok(t)) => (n.max(0) as u64, t.unwrap_or_default()),
        (Err(e), _) | (_, Err(e)) => (0, e),
    }
}

/// Calls a static `()Ljava/lang/String;` method of the bridge; `None` for a null result.
fn call_string(env: &mut Env<'_>, method: &JNIStr) -> Result<Option<String>, String> {
    let obj = env
        .call_static_method(BRIDGE, method, jni_sig!("()Ljava/lang/String;"), &[])
        .and_then(|v| v.l())
        .map_err(|e| describe(env, "StreamBridge", e))?;
    if obj.is_null() {
        return Ok(None);
    }
    env.cast_local::<JString>(obj)
        .and_then(|s| s.try_to_string(env))
        .map(Some)
        .map_err(|e| format!("{e}"))
}

/// `latency=live`: opens JFR's internal packages to the bridge and starts its forced-flush
/// thread (`StreamBridge.startLive`). Err is one line; the stream then keeps JFR's latency.
///
/// `jdk.jfr` does not export `jdk.jfr.internal`, and `--add-opens` is the user's command line,
/// not ours. JNI ignores Java access checks, so the agent calls the private
/// `Module.implAddOpens(String, Module)` of the `jdk.jfr` module (present, with this signature,
/// on JDK 17, 21 and 25) to open `jdk.jfr.internal` (and `jdk.jfr.internal.util`, JDK 22+) to the
/// bridge's module only: the unnamed module of the boot loader, where no application code lives.
/// The bridge then reaches the flush methods by ordinary reflection.
pub fn start_live(env: &mut Env<'_>, interval_ms: i64) -> Result<(), String> {
    open_jfr_internals(env)?;
    let result = env
        .call_static_method(
            BRIDGE,
            jni_str!("startLive"),
            jni_sig!("(J)Ljava/lang/String;"),
            &[JValue::Long(interval_ms)],
        )
        .and_then(|v| v.l())
        .map_err(|e| describe(env, "StreamBridge.startLive", e))?;
    if result.is_null() {
        return Ok(());
    }
    let s = env
        .cast_local::<JString>(result)
        .map_err(|e| format!("{e}"))?;
    Err(s.try_to_string(env).unwrap_or_else(|e| format!("{e}")))
}

/// The module of `class` (a class object or a class name to find).
fn module_of<'l>(env: &mut Env<'l>, class: &JNIStr, what: &str) -> Result<JObject<'l>, String> {
    let c = env.find_class(class).map_err(|e| describe(env, what, e))?;
    env.call_method(
        &c,
        jni_str!("getModule"),
        jni_sig!("()Ljava/lang/Module;"),
        &[],
    )
    .and_then(|v| v.l())
    .map_err(|e| describe(env, &format!("{what}.class.getModule"), e))
}

/// Exports `jdk.internal.misc` of `java.base` to the bridge's module only (the unnamed module of
/// the boot loader), for `RingWriter`: the private `Module.implAddExports(String, Module)`,
/// present with this signature on JDK 17, 21 and 25 (JNI ignores access checks), as
/// `open_jfr_internals` does for `latency=live`.
fn export_unsafe(env: &mut Env<'_>) -> Result<(), String> {
    let base = module_of(env, jni_str!("java/lang/Object"), "java.lang.Object")?;
    let bridge = module_of(env, BRIDGE, "StreamBridge")?;
    let name = JString::from_str(env, "jdk.internal.misc").map_err(|e| format!("{e}"))?;
    env.call_method(
        &base,
        jni_str!("implAddExports"),
        jni_sig!("(Ljava/lang/String;Ljava/lang/Module;)V"),
        &[JValue::Object(&name), JValue::Object(&bridge)],
    )
    .map_err(|e| describe(env, "exporting jdk.internal.misc", e))?;
    Ok(())
}

fn open_jfr_internals(env: &mut Env<'_>) -> Result<(), String> {
    let jfr_module = module_of(
        env,
        jni_str!("jdk/jfr/FlightRecorder"),
        "jdk.jfr.FlightRecorder",
    )?;
    let bridge_module = module_of(env, BRIDGE, "StreamBridge")?;
    for (pkg, required) in [("jdk.jfr.internal", true), ("jdk.jfr.internal.util", false)] {
        let name = JString::from_str(env, pkg).map_err(|e| format!("{e}"))?;
        let r = env.call_method(
            &jfr_module,
            jni_str!("implAddOpens"),
            jni_sig!("(Ljava/lang/String;Ljava/lang/Module;)V"),
            &[JValue::Object(&name), JValue::Object(&bridge_module)],
        );
        if let Err(e) = r {
            let msg = describe(env, &format!("opening {pkg}"), e);
            if required {
                return Err(msg);
            }
        }
    }
    Ok(())
}
