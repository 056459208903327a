/**
 * Internals of the jfrctx facade. <b>Not API</b>: these classes are public only so that the
 * {@code dev.jfrctx} package can use them; they change without notice and applications must not use
 * them.
 */
package dev.jfrctx.internal;
