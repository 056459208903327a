package dev.jfrctx.examples.server;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;

/**
 * Starts an embedded Apache Tomcat 10.1 on 127.0.0.1 with the example web application deployed
 * from a directory, the way a standalone Tomcat deploys one from {@code webapps/}: the
 * application's classes come from its own {@code WEB-INF/classes} and {@code WEB-INF/lib} through
 * Tomcat's web-application class loader, everything else from this JVM's class path (the
 * server's {@code lib/}). So the jfrctx facade jar may sit in either place.
 *
 * <pre>
 *   java -agentpath:libjfrctx.so=... -cp tomcat-embed-core.jar:tomcat-annotations-api.jar:server-classes[:jfrctx.jar] \
 *        dev.jfrctx.examples.server.EmbeddedTomcat --webapp DIR [--path /shop] [--port 0] [--virtual] [--seconds 300]
 * </pre>
 *
 * <ul>
 *   <li>{@code --webapp DIR}: the application (a directory with {@code WEB-INF/web.xml},
 *       {@code WEB-INF/classes}, optionally {@code WEB-INF/lib/*.jar}), deployed at {@code --path}
 *       (default {@code /shop});
 *   <li>{@code --port N}: the HTTP port on 127.0.0.1 (default 0: any free port);
 *   <li>{@code --virtual}: request threads are virtual threads (JDK 21+; Tomcat's
 *       {@code useVirtualThreads});
 *   <li>{@code --seconds N}: stop after N seconds at the latest (default 300).
 * </ul>
 *
 * Prints {@code listening on 127.0.0.1:PORT} once requests are served. A request to
 * {@code /admin/stop} stops the server; {@code main} then returns and the JVM ends normally.
 */
public final class EmbeddedTomcat {
    private EmbeddedTomcat() {}

    public static void main(String[] args) throws Exception {
        String webapp = null;
        String path = "/shop";
        int port = 0;
        boolean virtual = false;
        long seconds = 300;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--webapp": webapp = value(args, ++i); break;
                case "--path": path = value(args, ++i); break;
                case "--port": port = Integer.parseInt(value(args, ++i)); break;
                case "--virtual": virtual = true; break;
                case "--seconds": seconds = Long.parseLong(value(args, ++i)); break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (webapp == null || !new File(webapp, "WEB-INF/web.xml").isFile()) {
            throw new IllegalArgumentException("--webapp DIR with a WEB-INF/web.xml is required");
        }

        Tomcat tomcat = new Tomcat();
        File base = Files.createTempDirectory("jfrctx-tomcat").toFile();
        tomcat.setBaseDir(base.getAbsolutePath());
        tomcat.setAddDefaultWebXmlToWebapp(false); // no JSP servlet (Jasper is not on the path)
        Connector connector = new Connector("HTTP/1.1");
        connector.setProperty("address", "127.0.0.1");
        connector.setPort(port);
        if (virtual) {
            connector.setProperty("useVirtualThreads", "true");
        }
        tomcat.setConnector(connector);
        tomcat.getHost().setAutoDeploy(false);

        tomcat.addWebapp(path, new File(webapp).getAbsolutePath());

        CountDownLatch stop = new CountDownLatch(1);
        Context admin = tomcat.addContext("/admin", null);
        Tomcat.addServlet(admin, "stop", new StopServlet(stop)).addMapping("/stop");

        tomcat.start();
        System.out.println("listening on 127.0.0.1:" + connector.getLocalPort()
                + (virtual ? " (virtual request threads)" : ""));
        System.out.flush();
        boolean asked = stop.await(seconds, TimeUnit.SECONDS);
        stopQuietly(tomcat);
        System.out.println(asked ? "stopped" : "stopped after " + seconds + " s");
        deleteTree(base);
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            throw new IllegalArgumentException(args[i - 1] + " needs a value");
        }
        return args[i];
    }

    private static void stopQuietly(Tomcat tomcat) {
        try {
            tomcat.stop();
            tomcat.destroy();
        } catch (LifecycleException e) {
            System.err.println("stopping Tomcat: " + e);
        }
    }

    private static void deleteTree(File f) {
        File[] children = f.listFiles();
        if (children != null) {
            for (File c : children) {
                deleteTree(c);
            }
        }
        f.delete();
    }

    /** {@code /admin/stop}: answers, then lets {@code main} stop the server. */
    private static final class StopServlet extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private final transient CountDownLatch stop;

        StopServlet(CountDownLatch stop) {
            this.stop = stop;
        }

        @Override
        protected void doGet(HttpServletRequest request, HttpServletResponse response)
                throws IOException {
            response.setContentType("text/plain");
            response.getWriter().println("stopping");
            response.flushBuffer();
            stop.countDown();
        }
    }
}
