/*
 * JNI baseline for the JMH run (bench/README.md): the smallest native context setter, one JNI
 * call per transition storing the id into a C thread-local. Built by scripts/bench.sh:
 *   gcc -O2 -shared -fPIC -I$JAVA_HOME/include -I$JAVA_HOME/include/linux -o libswitch.so switch.c
 */
#include <jni.h>

static __thread jlong current_context;

JNIEXPORT void JNICALL Java_dev_jfrctx_bench_JniSwitch_set(JNIEnv *env, jclass cls, jlong id) {
    (void)env;
    (void)cls;
    current_context = id;
}

JNIEXPORT jlong JNICALL Java_dev_jfrctx_bench_JniSwitch_get(JNIEnv *env, jclass cls) {
    (void)env;
    (void)cls;
    return current_context;
}
