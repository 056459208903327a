package dev.jfrctx.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

/** Lets a forked benchmark tell {@link Main} how a peer was set up (appends one line to a file). */
final class PeerStatus {

    private PeerStatus() {
    }

    static void record(String peer, String status) {
        String file = System.getProperty("jfrctx.bench.status");
        String line = peer + "\t" + status.replace('\n', ' ').replace('\t', ' ') + "\n";
        System.out.print("[peer] " + line);
        if (file == null) {
            return;
        }
        try {
            Files.write(Paths.get(file), line.getBytes(StandardCharsets.UTF_8),
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            System.out.println("[peer] cannot write " + file + ": " + e);
        }
    }

    static Path tempFile(String prefix, String suffix) throws IOException {
        Path p = Files.createTempFile(prefix, suffix);
        p.toFile().deleteOnExit();
        return p;
    }
}
