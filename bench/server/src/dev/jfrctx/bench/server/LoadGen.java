package dev.jfrctx.bench.server;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * A closed-loop HTTP/1.1 load generator with a fixed number of keep-alive connections to
 * 127.0.0.1, each on its own thread sending the next request as soon as the previous answer is
 * read, cycling through the given paths (each connection starts at a different one).
 *
 * <pre>
 *   java dev.jfrctx.bench.server.LoadGen PORT CONNECTIONS WARMUP_S MEASURE_S PATH[,PATH...]
 * </pre>
 *
 * Prints {@code window start} when the warm-up ends and {@code window end requests=N errors=N
 * ns=N} when the measured window ends (flushed at once: the harness takes its snapshots of the
 * server when it reads these lines), then stops. Bounded: exits after WARMUP_S + MEASURE_S + 5 s
 * whatever happens.
 */
public final class LoadGen {
    private LoadGen() {}

    public static void main(String[] args) throws Exception {
        int port = Integer.parseInt(args[0]);
        int connections = Integer.parseInt(args[1]);
        double warmup = Double.parseDouble(args[2]);
        double measure = Double.parseDouble(args[3]);
        String[] paths = args[4].split(",");
        AtomicBoolean stop = new AtomicBoolean();
        LongAdder done = new LongAdder();
        LongAdder errors = new LongAdder();
        Thread[] threads = new Thread[connections];
        for (int c = 0; c < connections; c++) {
            int first = c;
            threads[c] = new Thread(() -> run(port, paths, first, stop, done, errors), "load-" + c);
            threads[c].setDaemon(true);
            threads[c].start();
        }
        Thread.sleep((long) (warmup * 1000));
        long n0 = done.sum();
        long e0 = errors.sum();
        long t0 = System.nanoTime();
        System.out.println("window start");
        System.out.flush();
        Thread.sleep((long) (measure * 1000));
        long n1 = done.sum();
        long e1 = errors.sum();
        long t1 = System.nanoTime();
        System.out.println("window end requests=" + (n1 - n0) + " errors=" + (e1 - e0) + " ns=" + (t1 - t0));
        System.out.flush();
        stop.set(true);
        for (Thread t : threads) {
            t.join(5000);
        }
    }

    private static void run(int port, String[] paths, int first, AtomicBoolean stop, LongAdder done, LongAdder errors) {
        byte[][] requests = new byte[paths.length][];
        for (int i = 0; i < paths.length; i++) {
            requests[i] = ("GET " + paths[i] + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
        }
        int next = first % paths.length;
        while (!stop.get()) {
            try (Socket s = new Socket()) {
                s.setTcpNoDelay(true);
                s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
                s.setSoTimeout(10_000);
                OutputStream out = s.getOutputStream();
                InputStream in = new BufferedInputStream(s.getInputStream(), 16384);
                while (!stop.get()) {
                    out.write(requests[next]);
                    out.flush();
                    next = (next + 1) % paths.length;
                    int status = readResponse(in);
                    if (status == 200) {
                        done.increment();
                    } else if (status < 0) {
                        break; // the server closed the connection: reconnect
                    } else {
                        errors.increment();
                    }
                }
            } catch (IOException e) {
                if (!stop.get()) {
                    errors.increment();
                    try {
                        Thread.sleep(10);
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
            }
        }
    }

    /** Reads one response (status line, headers, Content-Length body); -1 at a closed connection. */
    private static int readResponse(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        int status = -1;
        long length = 0;
        boolean close = false;
        boolean firstLine = true;
        while (true) {
            line.setLength(0);
            int b;
            while ((b = in.read()) != '\n') {
                if (b < 0) {
                    return -1;
                }
                if (b != '\r') {
                    line.append((char) b);
                }
            }
            if (firstLine) {
                status = Integer.parseInt(line.substring(9, 12));
                firstLine = false;
            } else if (line.length() == 0) {
                break;
            } else {
                String h = line.toString().toLowerCase();
                if (h.startsWith("content-length:")) {
                    length = Long.parseLong(h.substring(15).trim());
                } else if (h.startsWith("connection:") && h.contains("close")) {
                    close = true;
                }
            }
        }
        for (long i = 0; i < length; i++) {
            if (in.read() < 0) {
                return -1;
            }
        }
        return close ? (status == 200 ? 200 : status) : status;
    }
}
