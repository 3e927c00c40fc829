#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

//! The deployment files under deploy/: the Kubernetes manifests and the
//! compose file parse and say what the collector needs (names, non-root
//! containers, probes on the telemetry endpoint, the configuration they
//! mount); every profbridge configuration they embed or copy passes
//! `profbridge validate`; the Dockerfile's last stage runs the binary as a
//! non-root user on an example configuration; the systemd unit starts
//! `profbridge serve --config` inside a sandbox.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use profbridge_testkit::TempDir;
use yaml_rust2::{Yaml, YamlLoader};

// ---------------------------------------------------------------- helpers

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(relative: &str) -> String {
    let path = repo().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every document of a YAML stream.
fn documents(relative: &str, text: &str) -> Vec<Yaml> {
    let docs = YamlLoader::load_from_str(text)
        .unwrap_or_else(|e| panic!("{relative}: not valid YAML: {e}"));
    assert!(!docs.is_empty(), "{relative}: no YAML document");
    for (i, doc) in docs.iter().enumerate() {
        assert!(
            doc.as_hash().is_some(),
            "{relative}: document {i} is not a mapping: {doc:?}"
        );
    }
    docs
}

/// Looks up a path of mapping keys (or list indices written as numbers).
fn at<'a>(node: &'a Yaml, path: &str) -> &'a Yaml {
    let mut node = node;
    for part in path.split('.') {
        node = match part.parse::<usize>() {
            Ok(index) if node.as_vec().is_some() => &node[index],
            _ => &node[part],
        };
    }
    node
}

fn text<'a>(node: &'a Yaml, path: &str, what: &str) -> &'a str {
    at(node, path)
        .as_str()
        .unwrap_or_else(|| panic!("{what}: {path} is not text: {:?}", at(node, path)))
}

fn list<'a>(node: &'a Yaml, path: &str) -> &'a [Yaml] {
    at(node, path).as_vec().map_or(&[], Vec::as_slice)
}

/// Runs `profbridge validate --config FILE` and insists on success.
fn validate_file(path: &Path, what: &str) {
    let output = Command::new(env!("CARGO_BIN_EXE_profbridge"))
        .args(["validate", "--config"])
        .arg(path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.ends_with(": OK\n"),
        "{what} does not validate:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Writes a configuration to a temporary file and validates it.
fn validate_text(config: &str, what: &str) {
    let dir = TempDir::new("deploy-config");
    let path = dir.path().join("config.yaml");
    std::fs::write(&path, config).unwrap();
    validate_file(&path, what);
}

/// The port of a `host:port`.
fn port_of(address: &str) -> i64 {
    address
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .unwrap_or_else(|| panic!("{address:?} is not host:port"))
}

// ------------------------------------------------------------- kubernetes

/// (file name, documents) of every deploy/kubernetes/*.yaml.
fn kubernetes_manifests() -> Vec<(String, Vec<Yaml>)> {
    let dir = repo().join("deploy/kubernetes");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
        .collect();
    names.sort();
    for expected in ["gateway.yaml", "gateway-kafka.yaml", "sidecar.yaml"] {
        assert!(
            names.iter().any(|name| name == expected),
            "deploy/kubernetes/{expected} is missing"
        );
    }
    names
        .into_iter()
        .map(|name| {
            let relative = format!("deploy/kubernetes/{name}");
            let docs = documents(&relative, &read(&relative));
            (name, docs)
        })
        .collect()
}

fn manifest(name: &str) -> Vec<Yaml> {
    kubernetes_manifests()
        .into_iter()
        .find(|(file, _)| file == name)
        .unwrap()
        .1
}

fn kind(doc: &Yaml) -> &str {
    doc["kind"].as_str().unwrap_or("")
}

fn name(doc: &Yaml) -> &str {
    doc["metadata"]["name"].as_str().unwrap_or("")
}

/// The Pod template of a workload, or the spec of a Pod.
fn pod_spec(doc: &Yaml) -> Option<&Yaml> {
    match kind(doc) {
        "Pod" => Some(&doc["spec"]),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => {
            Some(&doc["spec"]["template"]["spec"])
        }
        _ => None,
    }
}

/// Containers and init containers (native sidecars are init containers).
fn all_containers(spec: &Yaml) -> Vec<&Yaml> {
    list(spec, "containers")
        .iter()
        .chain(list(spec, "initContainers"))
        .collect()
}

fn is_profbridge(container: &Yaml) -> bool {
    container["image"]
        .as_str()
        .is_some_and(|image| image.contains("profbridge"))
}

/// The profbridge configurations embedded in ConfigMaps, by
/// (ConfigMap name, key).
fn embedded_configs(docs: &[Yaml]) -> BTreeMap<(String, String), String> {
    let mut configs = BTreeMap::new();
    for doc in docs.iter().filter(|doc| kind(doc) == "ConfigMap") {
        let Some(data) = doc["data"].as_hash() else {
            continue;
        };
        for (key, value) in data {
            let key = key.as_str().unwrap();
            if key.ends_with(".yaml") || key.ends_with(".yml") {
                configs.insert(
                    (name(doc).to_owned(), key.to_owned()),
                    value.as_str().unwrap().to_owned(),
                );
            }
        }
    }
    configs
}

/// The configuration file a profbridge container runs on: the path after
/// `--config` in its args, resolved through its volume mounts to
/// (ConfigMap name, key).
fn mounted_config(spec: &Yaml, container: &Yaml, what: &str) -> (String, String) {
    let args: Vec<&str> = list(container, "args")
        .iter()
        .map(|arg| arg.as_str().unwrap())
        .collect();
    assert_eq!(
        args.get(..2),
        Some(&["serve", "--config"][..]),
        "{what}: args should start with `serve --config FILE`: {args:?}"
    );
    let file = Path::new(args[2]);
    let directory = file.parent().unwrap().to_str().unwrap();
    let key = file.file_name().unwrap().to_str().unwrap();
    let mount = list(container, "volumeMounts")
        .iter()
        .find(|mount| mount["mountPath"].as_str() == Some(directory))
        .unwrap_or_else(|| panic!("{what}: nothing is mounted at {directory}"));
    let volume_name = mount["name"].as_str().unwrap();
    let volume = list(spec, "volumes")
        .iter()
        .find(|volume| volume["name"].as_str() == Some(volume_name))
        .unwrap_or_else(|| panic!("{what}: volume {volume_name} is not defined"));
    let config_map = text(volume, "configMap.name", what);
    (config_map.to_owned(), key.to_owned())
}

/// The port a probe's `httpGet.port` means: a number, or the name of one of
/// the container's ports.
fn probe_port(container: &Yaml, probe: &str, what: &str) -> i64 {
    let port = &container[probe]["httpGet"]["port"];
    if let Some(number) = port.as_i64() {
        return number;
    }
    let port_name = port
        .as_str()
        .unwrap_or_else(|| panic!("{what}: {probe} has no httpGet.port"));
    list(container, "ports")
        .iter()
        .find(|p| p["name"].as_str() == Some(port_name))
        .and_then(|p| p["containerPort"].as_i64())
        .unwrap_or_else(|| {
            panic!("{what}: {probe} names port {port_name:?}, which the container does not declare")
        })
}

#[test]
fn every_kubernetes_document_parses_and_is_named() {
    let mut kinds = Vec::new();
    for (file, docs) in kubernetes_manifests() {
        for (i, doc) in docs.iter().enumerate() {
            let what = format!("deploy/kubernetes/{file}, document {i}");
            assert!(!text(doc, "apiVersion", &what).is_empty(), "{what}");
            assert!(!kind(doc).is_empty(), "{what}: no kind");
            assert!(!name(doc).is_empty(), "{what}: no metadata.name");
            kinds.push(format!("{file}: {}/{}", kind(doc), name(doc)));
        }
    }
    for expected in [
        "gateway.yaml: ConfigMap/",
        "gateway.yaml: Deployment/",
        "gateway.yaml: Service/",
        "gateway-kafka.yaml: ConfigMap/",
        "gateway-kafka.yaml: StatefulSet/",
        "sidecar.yaml: ConfigMap/",
        "sidecar.yaml: Deployment/",
    ] {
        assert!(
            kinds.iter().any(|k| k.starts_with(expected)),
            "no {expected}… in {kinds:?}"
        );
    }
}

#[test]
fn kubernetes_configmaps_hold_valid_configurations_that_containers_mount() {
    let mut mounted = 0;
    for (file, docs) in kubernetes_manifests() {
        let configs = embedded_configs(&docs);
        for ((config_map, key), config) in &configs {
            validate_text(
                config,
                &format!("deploy/kubernetes/{file}: ConfigMap {config_map}, key {key}"),
            );
        }
        for doc in &docs {
            let Some(spec) = pod_spec(doc) else {
                continue;
            };
            for container in all_containers(spec)
                .into_iter()
                .filter(|c| is_profbridge(c))
            {
                let what = format!(
                    "deploy/kubernetes/{file}: {} {}, container {}",
                    kind(doc),
                    name(doc),
                    text(container, "name", &file)
                );
                let source = mounted_config(spec, container, &what);
                assert!(
                    configs.contains_key(&source),
                    "{what}: runs on {source:?}, which no ConfigMap of {file} holds"
                );
                mounted += 1;
            }
        }
    }
    assert!(
        mounted >= 3,
        "a sidecar and two gateway containers at least"
    );
}

#[test]
fn kubernetes_containers_run_as_non_root() {
    for (file, docs) in kubernetes_manifests() {
        for doc in &docs {
            let Some(spec) = pod_spec(doc) else {
                continue;
            };
            let pod = &spec["securityContext"];
            for container in all_containers(spec) {
                let what = format!(
                    "deploy/kubernetes/{file}: {} {}, container {}",
                    kind(doc),
                    name(doc),
                    text(container, "name", &file)
                );
                let own = &container["securityContext"];
                let non_root = own["runAsNonRoot"]
                    .as_bool()
                    .or(pod["runAsNonRoot"].as_bool());
                assert_eq!(non_root, Some(true), "{what}: runAsNonRoot");
                let user = own["runAsUser"].as_i64().or(pod["runAsUser"].as_i64());
                assert_ne!(user, Some(0), "{what}: runAsUser 0");
                assert_eq!(
                    own["allowPrivilegeEscalation"].as_bool(),
                    Some(false),
                    "{what}: allowPrivilegeEscalation"
                );
                if is_profbridge(container) {
                    assert_eq!(
                        own["readOnlyRootFilesystem"].as_bool(),
                        Some(true),
                        "{what}: readOnlyRootFilesystem"
                    );
                    assert!(
                        list(own, "capabilities.drop")
                            .iter()
                            .any(|c| c.as_str() == Some("ALL")),
                        "{what}: capabilities should drop ALL"
                    );
                    for resource in ["requests", "limits"] {
                        assert!(
                            container["resources"][resource]["memory"]
                                .as_str()
                                .is_some(),
                            "{what}: no resources.{resource}.memory"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn gateway_probes_health_and_ready_on_the_telemetry_port() {
    let docs = manifest("gateway.yaml");
    let configs = embedded_configs(&docs);
    let deployment = docs
        .iter()
        .find(|doc| kind(doc) == "Deployment")
        .expect("a Deployment in gateway.yaml");
    assert_eq!(deployment["spec"]["replicas"].as_i64(), Some(2), "replicas");
    let spec = pod_spec(deployment).unwrap();
    let container = all_containers(spec)
        .into_iter()
        .find(|c| is_profbridge(c))
        .expect("a profbridge container in the gateway Deployment");
    let what = "deploy/kubernetes/gateway.yaml";

    let source = mounted_config(spec, container, what);
    let config = &documents(what, &configs[&source])[0];
    assert_probes_on_the_telemetry_port(config, container, what);

    // Receivers listen on every interface, and the Service exposes them.
    let receiver_ports: Vec<i64> = ["grpc", "http"]
        .iter()
        .map(|protocol| {
            let endpoint = text(
                config,
                &format!("receivers.otlp.protocols.{protocol}.endpoint"),
                what,
            );
            assert!(endpoint.starts_with("0.0.0.0:"), "{what}: {endpoint}");
            port_of(endpoint)
        })
        .collect();
    assert_eq!(receiver_ports, [4317, 4318]);
    let service = docs
        .iter()
        .find(|doc| kind(doc) == "Service")
        .expect("a Service in gateway.yaml");
    let service_ports: Vec<i64> = list(service, "spec.ports")
        .iter()
        .map(|p| p["port"].as_i64().unwrap())
        .collect();
    for port in receiver_ports {
        assert!(service_ports.contains(&port), "Service lacks port {port}");
    }
    let selector = at(service, "spec.selector").as_hash().unwrap();
    let labels = at(deployment, "spec.template.metadata.labels");
    for (key, value) in selector {
        assert_eq!(&labels[key.as_str().unwrap()], value, "Service selector");
    }

    // The persistent queue is on a volume, not the read-only root.
    let storage = text(config, "exporters.otlp.sending_queue.storage", what);
    assert_on_a_writable_mount(container, storage, what);
}

/// The kubelet reaches the telemetry endpoint on the Pod's address, and
/// the liveness and readiness probes ask it `/health` and `/ready`.
fn assert_probes_on_the_telemetry_port(config: &Yaml, container: &Yaml, what: &str) {
    let telemetry = text(config, "service.telemetry.metrics.address", what);
    assert!(
        telemetry.starts_with("0.0.0.0:"),
        "{what}: the kubelet probes the Pod's address, so telemetry must listen on 0.0.0.0, not {telemetry}"
    );
    let telemetry_port = port_of(telemetry);
    for (probe, path) in [("livenessProbe", "/health"), ("readinessProbe", "/ready")] {
        assert_eq!(
            text(container, &format!("{probe}.httpGet.path"), what),
            path,
            "{what}: {probe}"
        );
        assert_eq!(
            probe_port(container, probe, what),
            telemetry_port,
            "{what}: {probe} should hit the telemetry port"
        );
    }
}

/// `path` is on a volume the container may write to, not its read-only root.
fn assert_on_a_writable_mount(container: &Yaml, path: &str, what: &str) {
    assert!(
        list(container, "volumeMounts").iter().any(|mount| {
            mount["readOnly"].as_bool() != Some(true)
                && path.starts_with(mount["mountPath"].as_str().unwrap())
        }),
        "{what}: no writable volume holds {path}"
    );
}

#[test]
fn the_kafka_gateway_fleet_shares_one_group_and_commits_only_what_its_disk_queue_holds() {
    let what = "deploy/kubernetes/gateway-kafka.yaml";
    let docs = manifest("gateway-kafka.yaml");
    let configs = embedded_configs(&docs);
    let workload = docs
        .iter()
        .find(|doc| kind(doc) == "StatefulSet")
        .expect("a StatefulSet in gateway-kafka.yaml");
    assert!(
        workload["spec"]["replicas"].as_i64().unwrap_or(1) >= 2,
        "{what}: a fleet, not one replica"
    );
    let spec = pod_spec(workload).unwrap();
    let container = all_containers(spec)
        .into_iter()
        .find(|c| is_profbridge(c))
        .expect("a profbridge container in the StatefulSet");
    let source = mounted_config(spec, container, what);
    let config = &documents(what, &configs[&source])[0];
    assert_probes_on_the_telemetry_port(config, container, what);

    // Profiles come only from the topic, in one consumer group that every
    // replica (one configuration) joins.
    let receivers: Vec<&str> = config["receivers"]
        .as_hash()
        .unwrap()
        .keys()
        .map(|id| id.as_str().unwrap())
        .collect();
    assert_eq!(receivers, ["kafka"], "{what}: receivers");
    assert!(
        !text(config, "receivers.kafka.group_id", what).is_empty(),
        "{what}: group_id"
    );
    assert!(
        list(&config["receivers"]["kafka"], "brokers")
            .iter()
            .all(|broker| broker.as_str().is_some_and(|b| !b.contains("://"))),
        "{what}: brokers are host:port"
    );

    // An offset is committed once the pipeline took its message: every
    // exporter keeps a persistent queue on the Pod's own volume, and no
    // batch processor takes messages before those queues do.
    let pipeline = &config["service"]["pipelines"]["profiles"];
    assert!(
        list(pipeline, "processors")
            .iter()
            .all(|id| !id.as_str().unwrap().starts_with("batch")),
        "{what}: a batch processor would let offsets be committed before the queue has the message"
    );
    let exporters = list(pipeline, "exporters");
    assert!(!exporters.is_empty(), "{what}: no exporter");
    let claims: Vec<&str> = list(workload, "spec.volumeClaimTemplates")
        .iter()
        .map(|claim| text(claim, "metadata.name", what))
        .collect();
    for exporter in exporters {
        let id = exporter.as_str().unwrap();
        let storage = text(
            &config["exporters"][id],
            "sending_queue.storage",
            &format!("{what}: exporter {id}"),
        );
        assert_on_a_writable_mount(container, storage, what);
        let mount = list(container, "volumeMounts")
            .iter()
            .filter(|mount| storage.starts_with(mount["mountPath"].as_str().unwrap()))
            .max_by_key(|mount| mount["mountPath"].as_str().unwrap().len())
            .unwrap();
        let volume = mount["name"].as_str().unwrap();
        assert!(
            claims.contains(&volume),
            "{what}: exporter {id}'s queue is on {volume}, which no volumeClaimTemplate gives each replica (it would not outlive the Pod)"
        );
    }

    // Nothing listens for profiles, so a Service exposes telemetry only.
    for service in docs.iter().filter(|doc| kind(doc) == "Service") {
        let ports: Vec<i64> = list(service, "spec.ports")
            .iter()
            .map(|p| p["port"].as_i64().unwrap())
            .collect();
        assert_eq!(
            ports,
            [port_of(text(
                config,
                "service.telemetry.metrics.address",
                what
            ))],
            "{what}: Service {}",
            name(service)
        );
    }
}

// ----------------------------------------------------------------- docker

#[test]
fn compose_file_parses_and_builds_the_image() {
    let relative = "deploy/docker/compose.yaml";
    let docs = documents(relative, &read(relative));
    assert_eq!(docs.len(), 1, "{relative}: one document");
    let service = &docs[0]["services"]["profbridge"];
    assert!(
        service.as_hash().is_some(),
        "{relative}: no services.profbridge"
    );
    let context =
        Path::new(relative)
            .parent()
            .unwrap()
            .join(text(service, "build.context", relative));
    let dockerfile = repo()
        .join(&context)
        .join(text(service, "build.dockerfile", relative));
    assert!(dockerfile.is_file(), "{}: missing", dockerfile.display());
    let volumes: Vec<&str> = list(service, "volumes")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        volumes.iter().any(|v| v.ends_with(":/var/lib/profbridge")),
        "{relative}: no volume at /var/lib/profbridge: {volumes:?}"
    );
    let ports: Vec<&str> = list(service, "ports")
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for port in ["4317", "4318", "8888"] {
        assert!(
            ports.iter().any(|p| p.ends_with(&format!(":{port}"))),
            "{relative}: port {port} not published: {ports:?}"
        );
    }
}

/// One Dockerfile instruction: keyword (upper case) and its arguments.
type Instruction = (String, String);

/// The instructions of each stage, continuation lines joined, comments
/// and parser directives dropped.
fn dockerfile_stages(text: &str) -> Vec<Vec<Instruction>> {
    let mut stages: Vec<Vec<Instruction>> = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (pending.is_empty() && trimmed.is_empty()) {
            continue;
        }
        if let Some(head) = trimmed.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let line = std::mem::take(&mut pending);
        let (keyword, args) = line.split_once(char::is_whitespace).unwrap_or((&line, ""));
        let keyword = keyword.to_ascii_uppercase();
        if keyword == "FROM" {
            stages.push(Vec::new());
        }
        if let Some(stage) = stages.last_mut() {
            stage.push((keyword, args.trim().to_owned()));
        }
    }
    stages
}

fn exec_form(instruction: &Instruction) -> Vec<String> {
    serde_json::from_str(&instruction.1).unwrap_or_else(|e| {
        panic!(
            "Dockerfile: {} should be in exec form (a JSON list): {} ({e})",
            instruction.0, instruction.1
        )
    })
}

#[test]
fn dockerfile_runs_profbridge_as_non_root_on_a_valid_example() {
    let dockerfile = read("deploy/docker/Dockerfile");
    let stages = dockerfile_stages(&dockerfile);
    assert!(
        stages.len() >= 2,
        "Dockerfile: a builder and a runtime stage"
    );
    let builder = stages[..stages.len() - 1].concat();
    assert!(
        builder.iter().any(|(keyword, args)| keyword == "RUN"
            && args.contains("cargo build --release --locked -p profbridge")),
        "Dockerfile: the builder should run `cargo build --release --locked -p profbridge`"
    );
    let last = stages.last().unwrap();
    let find = |keyword: &str| -> &Instruction {
        last.iter()
            .rev()
            .find(|(k, _)| k == keyword)
            .unwrap_or_else(|| panic!("Dockerfile: the final stage has no {keyword}"))
    };

    let user = &find("USER").1;
    let uid = user.split(':').next().unwrap();
    assert!(
        !uid.is_empty() && uid != "root" && uid != "0",
        "Dockerfile: USER {user} is root"
    );

    let entrypoint = exec_form(find("ENTRYPOINT"));
    assert_eq!(entrypoint, ["/usr/local/bin/profbridge"]);
    assert!(
        last.iter().any(|(k, args)| k == "COPY"
            && args.split_whitespace().last() == Some("/usr/local/bin/profbridge")),
        "Dockerfile: the final stage should copy the binary to /usr/local/bin/profbridge"
    );

    let cmd = exec_form(find("CMD"));
    assert_eq!(
        cmd.get(..2),
        Some(&["serve".to_owned(), "--config".to_owned()][..]),
        "Dockerfile: CMD {cmd:?}"
    );
    let config = &cmd[2];
    let example = last
        .iter()
        .filter(|(k, _)| k == "COPY")
        .find_map(|(_, args)| {
            let words: Vec<&str> = args
                .split_whitespace()
                .filter(|w| !w.starts_with("--"))
                .collect();
            match words[..] {
                [source, destination]
                    if destination == config && source.starts_with("config/examples/") =>
                {
                    Some(source.to_owned())
                }
                _ => None,
            }
        })
        .unwrap_or_else(|| {
            panic!("Dockerfile: the final stage should COPY a config/examples file to {config}")
        });
    let example_path = repo().join(&example);
    validate_file(&example_path, &example);

    // Inside a container, loopback listeners are unreachable.
    let docs = documents(&example, &read(&example));
    let telemetry = text(&docs[0], "service.telemetry.metrics.address", &example);
    assert!(
        telemetry.starts_with("0.0.0.0:"),
        "{example}: telemetry on {telemetry}"
    );
    let exposed: Vec<&str> = find("EXPOSE").1.split_whitespace().collect();
    assert!(exposed.contains(&port_of(telemetry).to_string().as_str()));
    for (id, receiver) in docs[0]["receivers"].as_hash().unwrap() {
        let mut endpoints = vec![&receiver["endpoint"]];
        if let Some(protocols) = receiver["protocols"].as_hash() {
            endpoints.extend(protocols.values().map(|p| &p["endpoint"]));
        }
        for endpoint in endpoints.into_iter().filter_map(Yaml::as_str) {
            assert!(
                endpoint.starts_with("0.0.0.0:"),
                "{example}: receiver {id:?} listens on {endpoint}"
            );
            assert!(
                exposed.contains(&port_of(endpoint).to_string().as_str()),
                "Dockerfile: EXPOSE lacks {endpoint}"
            );
        }
    }

    // The build context keeps what the workspace needs.
    let ignore = read("deploy/docker/Dockerfile.dockerignore");
    for line in ignore.lines().map(str::trim) {
        for needed in [
            "crates",
            "config",
            "proto",
            "Cargo.toml",
            "Cargo.lock",
            "tests",
        ] {
            assert_ne!(line, needed, "Dockerfile.dockerignore leaves out {needed}");
        }
    }
}

// ---------------------------------------------------------------- systemd

/// `Key=value` settings of a unit file by (section, key), in order; an
/// empty assignment is kept as "".
fn unit_settings(text: &str) -> BTreeMap<(String, String), Vec<String>> {
    let mut settings: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            name.clone_into(&mut section);
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("profbridge.service: not Key=value: {line}"));
        settings
            .entry((section.clone(), key.trim().to_owned()))
            .or_default()
            .push(value.trim().to_owned());
    }
    settings
}

#[test]
fn systemd_unit_runs_profbridge_serve_in_a_sandbox() {
    let relative = "deploy/systemd/profbridge.service";
    let unit = read(relative);
    let settings = unit_settings(&unit);
    let service = |key: &str| -> Vec<String> {
        settings
            .get(&("Service".to_owned(), key.to_owned()))
            .cloned()
            .unwrap_or_default()
    };
    let one = |key: &str| -> String {
        let values = service(key);
        assert!(!values.is_empty(), "{relative}: no {key}=");
        values.last().unwrap().clone()
    };
    let yes = |key: &str| {
        let value = one(key);
        assert!(
            ["yes", "true", "on", "1"].contains(&value.as_str()),
            "{relative}: {key}={value}, expected yes"
        );
    };

    let exec_start = one("ExecStart");
    let words: Vec<&str> = exec_start.split_whitespace().collect();
    assert!(
        words.len() >= 4
            && words[0] == "/usr/local/bin/profbridge"
            && words[1..4] == ["serve", "--config", "/etc/profbridge/config.yaml"],
        "{relative}: ExecStart={exec_start}"
    );

    for key in [
        "NoNewPrivileges",
        "ProtectHome",
        "PrivateTmp",
        "PrivateDevices",
        "ProtectKernelTunables",
        "ProtectKernelModules",
        "ProtectKernelLogs",
        "ProtectControlGroups",
    ] {
        yes(key);
    }
    assert_eq!(one("ProtectSystem"), "strict", "{relative}: ProtectSystem");
    let families: std::collections::BTreeSet<String> = service("RestrictAddressFamilies")
        .iter()
        .flat_map(|v| v.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .collect();
    assert_eq!(
        families.into_iter().collect::<Vec<_>>(),
        ["AF_INET", "AF_INET6", "AF_UNIX"],
        "{relative}: RestrictAddressFamilies"
    );
    assert_eq!(
        one("CapabilityBoundingSet"),
        "",
        "{relative}: CapabilityBoundingSet= should be empty (no capabilities)"
    );
    assert!(
        service("SystemCallFilter")
            .iter()
            .any(|v| v.split_whitespace().any(|w| w == "@system-service")),
        "{relative}: SystemCallFilter=@system-service"
    );
    assert!(
        !one("StateDirectory").is_empty(),
        "{relative}: StateDirectory"
    );
    assert!(
        !one("ReadWritePaths").is_empty(),
        "{relative}: ReadWritePaths"
    );
    assert!(!one("MemoryMax").is_empty(), "{relative}: MemoryMax");
    assert_eq!(one("Restart"), "on-failure", "{relative}: Restart");
    let dynamic = service("DynamicUser")
        .last()
        .is_some_and(|v| ["yes", "true", "on", "1"].contains(&v.as_str()));
    let user = service("User").last().cloned().unwrap_or_default();
    assert!(
        dynamic || (!user.is_empty() && user != "root" && user != "0"),
        "{relative}: DynamicUser=yes or a dedicated User= (got {user:?})"
    );

    // systemd's own check, on a copy whose binary exists on this machine.
    let purpose = format!(
        "`systemd-analyze verify` of {relative} (without it, only this test's own parser checks the unit; Debian package systemd)"
    );
    if profbridge_testkit::require_tool("systemd-analyze", &["--version"], &purpose).is_none() {
        return;
    }
    let dir = TempDir::new("deploy-systemd");
    let copy = dir.path().join("profbridge.service");
    std::fs::write(
        &copy,
        unit.replace(
            "/usr/local/bin/profbridge",
            env!("CARGO_BIN_EXE_profbridge"),
        ),
    )
    .unwrap();
    let output = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&copy)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // systemd-analyze exits 0 on settings it ignores; it names the file
    // in those warnings.
    let complaints: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("profbridge.service"))
        .collect();
    assert!(
        output.status.success() && complaints.is_empty(),
        "systemd-analyze verify {relative}:\n{stderr}"
    );
}

// ------------------------------------------------- gateway exposure

/// The gateway's files with their commented-out TLS, token, Secret volume
/// and mount lines uncommented, as a user turning them on would.
fn with_tls_and_auth(text: &str) -> String {
    const KEYS: [&str; 11] = [
        "tls:",
        "auth:",
        "cert_file:",
        "key_file:",
        "bearer_token_file:",
        "- name: tls",
        "- name: token",
        "mountPath:",
        "readOnly:",
        "secret:",
        "secretName:",
    ];
    let mut out = String::new();
    for line in text.lines() {
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        match body.strip_prefix("# ") {
            Some(rest) if KEYS.iter().any(|key| rest.trim_start().starts_with(key)) => {
                out.push_str(indent);
                out.push_str(rest);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// A self-signed certificate with its key, and a token, where the
/// gateway's files expect them: `validate` loads them as `serve` does.
fn secret_files(dir: &Path) -> (PathBuf, PathBuf) {
    let (tls, auth) = (dir.join("tls"), dir.join("auth"));
    std::fs::create_dir_all(&tls).unwrap();
    std::fs::create_dir_all(&auth).unwrap();
    let certified =
        rcgen::generate_simple_self_signed(vec!["profbridge-gateway".to_owned()]).unwrap();
    std::fs::write(tls.join("tls.crt"), certified.cert.pem()).unwrap();
    std::fs::write(tls.join("tls.key"), certified.signing_key.serialize_pem()).unwrap();
    std::fs::write(auth.join("token"), "a-token-for-the-test\n").unwrap();
    (tls, auth)
}

/// Every OTLP protocol of a configuration requires TLS and a token.
fn assert_tls_and_auth_on_every_protocol(config: &str, what: &str) {
    let doc = &documents(what, config)[0];
    for protocol in ["grpc", "http"] {
        let settings = &doc["receivers"]["otlp"]["protocols"][protocol];
        assert!(
            settings["tls"]["cert_file"].as_str().is_some()
                && settings["auth"]["bearer_token_file"].as_str().is_some(),
            "{what}: {protocol} has no tls and auth: {settings:?}"
        );
    }
}

#[test]
fn the_gateway_states_its_exposure_and_turns_on_tls_and_auth_when_uncommented() {
    let dir = TempDir::new("gateway-secured");
    let (tls, auth) = secret_files(dir.path());
    let local = |text: &str| {
        text.replace("/etc/profbridge-tls", tls.to_str().unwrap())
            .replace("/etc/profbridge-auth", auth.to_str().unwrap())
    };

    let example = read("config/examples/gateway.yaml");
    assert!(
        example.contains("EXPOSURE"),
        "the example says who can reach it"
    );
    let secured = with_tls_and_auth(&example);
    assert_tls_and_auth_on_every_protocol(&secured, "the example, secured");
    validate_text(&local(&secured), "config/examples/gateway.yaml, secured");

    let manifest = read("deploy/kubernetes/gateway.yaml");
    assert!(
        manifest.contains("EXPOSURE"),
        "the manifest says who can reach it"
    );
    let docs = documents("gateway.yaml, secured", &with_tls_and_auth(&manifest));
    let configs = embedded_configs(&docs);
    let (_, config) = configs.iter().next().expect("the gateway's ConfigMap");
    assert_tls_and_auth_on_every_protocol(config, "the gateway's ConfigMap, secured");
    validate_text(&local(config), "the gateway's ConfigMap, secured");
    let deployment = docs
        .iter()
        .find(|doc| kind(doc) == "Deployment")
        .expect("the gateway's Deployment");
    let spec = pod_spec(deployment).unwrap();
    let container = all_containers(spec)
        .into_iter()
        .find(|c| is_profbridge(c))
        .expect("the profbridge container");
    // Each folder the configuration reads from is a Secret mounted there.
    for (folder, secret) in [
        ("/etc/profbridge-tls", "profbridge-gateway-tls"),
        ("/etc/profbridge-auth", "profbridge-gateway-token"),
    ] {
        assert!(config.contains(folder), "the configuration reads {folder}");
        let mount = list(container, "volumeMounts")
            .iter()
            .find(|mount| mount["mountPath"].as_str() == Some(folder))
            .unwrap_or_else(|| panic!("nothing is mounted at {folder}"));
        let volume = list(spec, "volumes")
            .iter()
            .find(|volume| volume["name"] == mount["name"])
            .unwrap_or_else(|| panic!("the volume mounted at {folder} is not defined"));
        assert_eq!(
            volume["secret"]["secretName"].as_str(),
            Some(secret),
            "{folder}"
        );
    }
}
