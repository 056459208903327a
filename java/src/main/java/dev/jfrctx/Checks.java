package dev.jfrctx;

/** Argument validation with one-line messages. */
final class Checks {

    private Checks() {
    }

    static String keyName(String name) {
        if (name == null) {
            throw new NullPointerException("jfrctx: key name is null");
        }
        if (name.isEmpty()) {
            throw new IllegalArgumentException("jfrctx: key name is empty");
        }
        if (name.length() > RecordingContextKey.MAX_NAME_LENGTH) {
            throw new IllegalArgumentException("jfrctx: key name has " + name.length()
                    + " chars, more than RecordingContextKey.MAX_NAME_LENGTH ("
                    + RecordingContextKey.MAX_NAME_LENGTH + ")");
        }
        return name;
    }

    static RecordingContextKey key(RecordingContextKey key) {
        if (key == null) {
            throw new NullPointerException("jfrctx: key is null");
        }
        return key;
    }

    static String value(RecordingContextKey key, String value) {
        if (value == null) {
            throw new NullPointerException("jfrctx: value for key \"" + key.name() + "\" is null");
        }
        if (value.isEmpty()) {
            throw new IllegalArgumentException("jfrctx: value for key \"" + key.name() + "\" is empty");
        }
        if (value.length() > RecordingContext.MAX_VALUE_LENGTH) {
            throw new IllegalArgumentException("jfrctx: value for key \"" + key.name() + "\" has "
                    + value.length() + " chars, more than RecordingContext.MAX_VALUE_LENGTH ("
                    + RecordingContext.MAX_VALUE_LENGTH + ")");
        }
        return value;
    }

    static void entries(int count) {
        if (count > RecordingContext.MAX_ENTRIES) {
            throw new IllegalArgumentException("jfrctx: context would have " + count
                    + " entries, more than RecordingContext.MAX_ENTRIES ("
                    + RecordingContext.MAX_ENTRIES + ")");
        }
    }

    static <T> T notNull(T argument, String what) {
        if (argument == null) {
            throw new NullPointerException("jfrctx: " + what + " is null");
        }
        return argument;
    }
}
