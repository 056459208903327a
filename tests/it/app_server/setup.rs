//! What the application-server runs share: Tomcat's jars, the compiled launcher and example web
//! application, the facade jar; and one run's server layout (`lib` or `webapp`).

use super::Layout;
use crate::common::jdk::{javac_to, run_tool};
use crate::common::tomcat::{compile_launcher, tomcat_jars};
use crate::common::{self, copy_tree};
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What every run shares: Tomcat's jars, the compiled launcher and web application, the facade
/// jar (from the harness's compiled facade).
pub(super) struct Build {
    tomcat: Vec<PathBuf>,
    server_classes: PathBuf,
    webapp_classes: PathBuf,
    facade_jar: PathBuf,
}

pub(super) fn build() -> &'static Build {
    static BUILD: OnceLock<Build> = OnceLock::new();
    BUILD.get_or_init(|| {
        let tomcat = tomcat_jars();
        let examples = common::root().join("examples/servlet");
        let dir = common::target_dir()
            .join("it-out/app_server")
            .join(format!("build-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let server_classes = dir.join("server");
        let webapp_classes = dir.join("webapp-classes");
        fs::create_dir_all(&server_classes).expect("mkdir");
        fs::create_dir_all(&webapp_classes).expect("mkdir");

        // The facade alone, as target/jfrctx.jar holds it (the harness compiles it with the
        // test workloads, which live in other packages).
        let facade_classes = common::classes();
        let facade_jar = dir.join("jfrctx.jar");
        run_tool(
            "jar",
            &[
                "--create".into(),
                "--file".into(),
                facade_jar.clone().into(),
                "-C".into(),
                facade_classes.into(),
                "dev/jfrctx".into(),
            ],
        );

        compile_launcher(&tomcat, &server_classes);
        let mut cp = tomcat.clone();
        cp.push(facade_jar.clone());
        javac_to(&cp, &webapp_classes, &examples.join("webapp/src"));
        Build {
            tomcat,
            server_classes,
            webapp_classes,
            facade_jar,
        }
    })
}

/// Lays out one run's server: `DIR/lib` (the server class path's extra jars) and `DIR/webapp`
/// (the deployed application). Returns the server class path.
pub(super) fn lay_out(dir: &Path, layout: Layout) -> (OsString, PathBuf) {
    let b = build();
    let _ = fs::remove_dir_all(dir);
    let webapp = dir.join("webapp");
    copy_tree(&b.webapp_classes, &webapp.join("WEB-INF/classes"));
    fs::copy(
        common::root().join("examples/servlet/webapp/WEB-INF/web.xml"),
        webapp.join("WEB-INF/web.xml"),
    )
    .expect("copy web.xml");
    let mut classpath = b.tomcat.clone();
    classpath.push(b.server_classes.clone());
    match layout {
        Layout::ServerLib => {
            let lib = dir.join("lib");
            fs::create_dir_all(&lib).expect("mkdir lib");
            fs::copy(&b.facade_jar, lib.join("jfrctx.jar")).expect("copy jar");
            classpath.push(lib.join("jfrctx.jar"));
        }
        Layout::WebappLib => {
            let lib = webapp.join("WEB-INF/lib");
            fs::create_dir_all(&lib).expect("mkdir WEB-INF/lib");
            fs::copy(&b.facade_jar, lib.join("jfrctx.jar")).expect("copy jar");
        }
    }
    (
        std::env::join_paths(&classpath).expect("class path"),
        webapp,
    )
}
