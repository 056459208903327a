package dev.jfrctx.otel;

/**
 * What the bridge records of a span besides the local root's attributes: the
 * {@value JfrctxOtel#SPAN_PROPERTY} setting.
 */
enum SpanIds {
    /** {@code trace_id} and the id of the span current on the thread (the default). */
    INNERMOST,
    /**
     * {@code trace_id} and the local root span's id (one value per request); local roots get
     * the attribute {@code pyroscope.profile.id}.
     */
    ROOT,
    /**
     * Neither id: only the root's attributes, whose maps recur from request to request, so that
     * no span makes a new context map.
     */
    NONE;

    /**
     * Parses the setting: null, blank or {@code innermost}, {@code root}, {@code none}.
     *
     * @throws IllegalArgumentException for another value
     */
    static SpanIds parse(String setting) {
        String s = setting == null ? "" : setting.trim();
        switch (s) {
            case "":
            case "innermost":
                return INNERMOST;
            case "root":
                return ROOT;
            case "none":
                return NONE;
            default:
                throw new IllegalArgumentException("jfrctx-otel: " + JfrctxOtel.SPAN_PROPERTY + "="
                        + setting + " is not one of innermost, root, none");
        }
    }
}
