/**
 * Thread recording context for JFR, following the draft JEP "Optionally Record Thread Context in
 * JFR" (JDK-8284453): {@link dev.jfrctx.RecordingContext} installs immutable maps of
 * {@link dev.jfrctx.RecordingContextKey} → value on the current thread; the jfrctx agent attaches
 * the context a thread had at each JFR sample's instant to that sample.
 *
 * <p>Without the agent the API is a cheap no-op that keeps its semantics.
 */
package dev.jfrctx;
