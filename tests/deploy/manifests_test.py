#!/usr/bin/python3
"""Structural checks of deploy/: no cluster or container engine runs here, so the manifests and
the Dockerfile are checked against each other, against the configs they carry, and against the
real shipper binary.

Usage: manifests_test.py SHIPPER_BINARY   (from the runfiles root, where deploy/ is)
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

K8S = "deploy/k8s"
SHIPPER = None  # set from argv
WORKLOAD_KINDS = ("Deployment", "DaemonSet")


def load_manifests():
    """{file name: [documents]} for every YAML file in deploy/k8s."""
    docs = {}
    for name in sorted(os.listdir(K8S)):
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(K8S, name)) as f:
                docs[name] = [d for d in yaml.safe_load_all(f) if d is not None]
    return docs


def flatten(tree, prefix=""):
    """Beats-style keys: nested and dotted maps alike become 'a.b.c' → scalar."""
    flat = {}
    for key, value in tree.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            flat.update(flatten(value, name))
        else:
            flat[name] = value
    return flat


def seconds(duration):
    """'20s', '1m', '500ms' → seconds (the forms the configs use)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(duration))
    if not m:
        raise ValueError(f"unsupported duration {duration!r}")
    return float(m[1]) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m[2]]


def port_of(address):
    return int(address.rsplit(":", 1)[1])


class Manifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files = load_manifests()
        cls.docs = [d for name, docs in cls.files.items() if name != "kustomization.yaml" for d in docs]
        cls.configmaps = {d["metadata"]["name"]: d for d in cls.docs if d["kind"] == "ConfigMap"}
        cls.workloads = [d for d in cls.docs if d["kind"] in WORKLOAD_KINDS]

    def by_kind(self, kind):
        return {d["metadata"]["name"]: d for d in self.docs if d["kind"] == kind}

    def shipper_containers(self, workload):
        spec = workload["spec"]["template"]["spec"]
        return [c for c in spec.get("initContainers", []) + spec.get("containers", [])
                if c["image"] == "shipper"]

    def config_of(self, workload):
        """The flattened shipper.yml of the ConfigMap mounted at /etc/shipper."""
        spec = workload["spec"]["template"]["spec"]
        (shipper,) = self.shipper_containers(workload)
        (mount,) = [m for m in shipper["volumeMounts"] if m["mountPath"] == "/etc/shipper"]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        text = self.configmaps[volume["configMap"]["name"]]["data"]["shipper.yml"]
        return flatten(yaml.safe_load(text))

    def test_every_document_is_a_named_kubernetes_object(self):
        for name, docs in self.files.items():
            if name == "kustomization.yaml":
                continue
            self.assertTrue(docs, f"{name} is empty")
            for d in docs:
                for field in ("apiVersion", "kind", "metadata"):
                    self.assertIn(field, d, f"{name}: a document without {field}")
                self.assertIn("name", d["metadata"], f"{name}: a {d['kind']} without a name")

    def test_kustomization_lists_every_manifest(self):
        listed = set(self.files["kustomization.yaml"][0]["resources"])
        on_disk = set(self.files) - {"kustomization.yaml"}
        self.assertEqual(listed, on_disk, "kustomization.yaml resources vs files in deploy/k8s")

    def test_kubectl_kustomize_renders(self):
        kubectl = shutil.which("kubectl")
        if kubectl is None:
            self.skipTest("kubectl is not installed on this machine: `kubectl kustomize` not run")
        with tempfile.TemporaryDirectory() as home:
            # Bazel's runfiles are symlinks, which kustomize does not follow: render a copy.
            copy = shutil.copytree(K8S, os.path.join(home, "k8s"))
            out = subprocess.run([kubectl, "kustomize", copy], capture_output=True, text=True,
                                 env={"HOME": home, "PATH": os.environ.get("PATH", "")})
        self.assertEqual(out.returncode, 0, out.stderr)
        rendered = [d for d in yaml.safe_load_all(out.stdout) if d]
        expected = sorted((d["kind"], d["metadata"]["name"]) for d in self.docs)
        self.assertEqual(sorted((d["kind"], d["metadata"]["name"]) for d in rendered), expected)
        for d in rendered:
            if d["kind"] != "Namespace":
                self.assertEqual(d["metadata"].get("namespace"), "logging", d["metadata"]["name"])
            for c in d.get("spec", {}).get("template", {}).get("spec", {}).get("initContainers", []):
                self.assertNotEqual(c["image"], "shipper", "the images: entry rewrites the image")

    def check_config(self, text, volumes):
        """--check_config of config `text` on a stand-in for the pod's file system: each path in
        `volumes` (where the pod mounts a volume, or the image makes a directory) becomes an
        empty directory under a temporary root, and the config's paths under it point there.
        --check_config checks that directories exist and are writable, which on this machine
        they are not."""
        with tempfile.TemporaryDirectory() as root:
            for path in sorted(volumes, key=len, reverse=True):
                os.makedirs(root + path, exist_ok=True)
                text = text.replace(path, root + path)
            with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
                f.write(text)
                f.flush()
                return subprocess.run([SHIPPER, "--check_config", "-c", f.name],
                                      capture_output=True, text=True)

    def test_configmaps_pass_check_config(self):
        mounts = {m["mountPath"] for w in self.workloads for c in self.shipper_containers(w)
                  for m in c.get("volumeMounts", [])}
        for name, cm in self.configmaps.items():
            out = self.check_config(cm["data"]["shipper.yml"], mounts)
            self.assertEqual(out.returncode, 0, f"ConfigMap {name}: {out.stdout}{out.stderr}")
            self.assertIn("config OK", out.stdout)

    def test_daemonset_args_pass_check_config_with_its_disk_queue(self):
        (daemonset,) = [w for w in self.workloads if w["kind"] == "DaemonSet"]
        (shipper,) = self.shipper_containers(daemonset)
        args = shipper["args"]
        self.assertIn("shipper.queue.disk.enabled=true", args)
        mounts = {m["mountPath"] for m in shipper["volumeMounts"]}
        (path,) = [a.split("=", 1)[1] for a in args if a.startswith("shipper.queue.disk.path=")]
        self.assertTrue(any(path.startswith(m + "/") for m in mounts),
                        f"the disk queue's {path} is on a volume the pod mounts")
        (queue_volume,) = [v for v in daemonset["spec"]["template"]["spec"]["volumes"]
                           if v["name"] == "shipper-queue"]
        self.assertIn("hostPath", queue_volume, "the queue outlives the pod on the node")
        with tempfile.TemporaryDirectory() as root:
            for m in mounts:
                os.makedirs(root + m, exist_ok=True)
            rooted = [a.replace(path, root + path) if a.startswith("shipper.queue.disk.path=")
                      else a for a in args if a != "-c" and not a.startswith("/etc/")]
            cm = self.configmaps["shipper-sidecar"]["data"]["shipper.yml"]
            for m in mounts:
                cm = cm.replace(m, root + m)
            with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
                f.write(cm)
                f.flush()
                out = subprocess.run([SHIPPER, "--check_config", "-c", f.name, *rooted],
                                     capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_image_default_config_passes_check_config(self):
        # The directories the image makes for the socket and the file output
        # (deploy/collect-runtime.sh).
        with open("deploy/shipper.yml") as f:
            out = self.check_config(f.read(), {"/var/run/shipper", "/var/lib/shipper"})
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def test_probes_are_grpc_on_the_health_port_the_config_opens(self):
        for w in self.workloads:
            name = w["metadata"]["name"]
            config = self.config_of(w)
            health = config.get("shipper.server.health.address", "")
            self.assertTrue(health, f"{name}: set shipper.server.health.address for the probes")
            (shipper,) = self.shipper_containers(w)
            ports = {p["name"]: p["containerPort"] for p in shipper["ports"]}
            self.assertEqual(ports.get("health"), port_of(health), name)
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                self.assertIn(probe, shipper, f"{name}: no {probe}")
                self.assertEqual(shipper[probe].get("grpc", {}).get("port"), port_of(health),
                                 f"{name}: {probe} must be a gRPC probe on the health port")
            self.assertNotIn("lifecycle", shipper, f"{name}: SIGTERM alone drains; no preStop")

    def test_grace_period_exceeds_shutdown_timeout(self):
        for w in self.workloads:
            config = self.config_of(w)
            drain = seconds(config.get("shipper.shutdown_timeout", "30s"))
            grace = w["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
            self.assertGreater(grace, drain, f"{w['metadata']['name']}: SIGKILL would cut the drain")

    def test_liveness_outlasts_the_drain(self):
        # The health status is NOT_SERVING for the whole drain: liveness must not kill it first.
        for w in self.workloads:
            drain = seconds(self.config_of(w).get("shipper.shutdown_timeout", "30s"))
            (shipper,) = self.shipper_containers(w)
            live = shipper["livenessProbe"]
            window = live.get("periodSeconds", 10) * live.get("failureThreshold", 3)
            self.assertGreater(window, drain, f"{w['metadata']['name']}: liveness gives up mid-drain")

    def test_runs_as_the_images_user(self):
        with open("deploy/Dockerfile") as f:
            (user,) = re.findall(r"^USER (\d+):(\d+)$", f.read(), re.M)
        for w in self.workloads:
            (shipper,) = self.shipper_containers(w)
            context = shipper["securityContext"]
            self.assertEqual((str(context["runAsUser"]), str(context["runAsGroup"])), user)
            self.assertTrue(context["runAsNonRoot"])

    def test_resources_are_set(self):
        for w in self.workloads:
            (shipper,) = self.shipper_containers(w)
            for kind in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    self.assertIn(resource, shipper["resources"][kind],
                                  f"{w['metadata']['name']}: resources.{kind}.{resource}")

    def test_sidecar_and_agent_share_the_socket(self):
        for w in self.workloads:
            config = self.config_of(w)
            server = config["shipper.server.server"]
            if not server.startswith("unix://"):
                continue  # the aggregator listens on TCP
            name = w["metadata"]["name"]
            socket_dir = os.path.dirname(server[len("unix://"):])
            spec = w["spec"]["template"]["spec"]
            (shipper,) = self.shipper_containers(w)
            self.assertEqual(shipper.get("restartPolicy"), "Always",
                             f"{name}: Shipper is a native sidecar (initContainers, restartPolicy Always)")
            (mount,) = [m for m in shipper["volumeMounts"] if m["mountPath"] == socket_dir]
            (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
            self.assertIn("emptyDir", volume, f"{name}: the socket lives in an emptyDir")
            agents = [c for c in spec["containers"]
                      if any(m["name"] == mount["name"] for m in c.get("volumeMounts", []))]
            self.assertTrue(agents, f"{name}: no container mounts the socket's volume")
            for agent in agents:
                env = {e["name"]: e.get("value") for e in agent.get("env", [])}
                self.assertEqual(env.get("SHIPPER_SERVER"), server, f"{name}/{agent['name']}")
            if config.get("shipper.server.socket_mode", 0o600) & 0o060:
                self.assertIn("fsGroup", spec.get("securityContext", {}),
                              f"{name}: a group-accessible socket needs the pod's fsGroup")

    def test_sidecars_forward_to_the_aggregator_service(self):
        services = self.by_kind("Service")
        policies = self.by_kind("NetworkPolicy")
        aggregator = self.by_kind("Deployment")["shipper-aggregator"]
        agg_config = self.config_of(aggregator)
        for w in self.workloads:
            config = self.config_of(w)
            if config.get("shipper.output.shipper.enabled") is not True:
                continue
            name = w["metadata"]["name"]
            host, port = config["shipper.output.shipper.server"].rsplit(":", 1)
            service = services[host.split(".")[0]]
            (svc_port,) = [p for p in service["spec"]["ports"] if p["port"] == int(port)]
            self.assertEqual(service["spec"]["selector"],
                             aggregator["spec"]["selector"]["matchLabels"])
            (container,) = self.shipper_containers(aggregator)
            named = {p["name"]: p["containerPort"] for p in container["ports"]}
            self.assertEqual(named[svc_port["targetPort"]], port_of(agg_config["shipper.server.server"]))
            labels = w["spec"]["template"]["metadata"]["labels"]
            admitted = [rule for rule in policies["shipper-aggregator"]["spec"]["ingress"]
                        if any(p["port"] == named[svc_port["targetPort"]] for p in rule["ports"])]
            self.assertTrue(any(
                all(labels.get(k) == v for k, v in peer["podSelector"]["matchLabels"].items())
                for rule in admitted for peer in rule.get("from", [])),
                f"{name}: the aggregator's NetworkPolicy does not admit its pods")

    def test_selectors_match_templates(self):
        for w in self.workloads:
            labels = w["spec"]["template"]["metadata"]["labels"]
            for k, v in w["spec"]["selector"]["matchLabels"].items():
                self.assertEqual(labels.get(k), v, w["metadata"]["name"])
        deployments = self.by_kind("Deployment")
        for hpa in self.by_kind("HorizontalPodAutoscaler").values():
            self.assertIn(hpa["spec"]["scaleTargetRef"]["name"], deployments)
        for pdb in self.by_kind("PodDisruptionBudget").values():
            target = deployments[pdb["metadata"]["name"]]
            self.assertEqual(pdb["spec"]["selector"]["matchLabels"],
                             target["spec"]["selector"]["matchLabels"])
            self.assertLess(pdb["spec"].get("maxUnavailable", 0), target["spec"]["replicas"])

    def test_otlp_ports_are_the_ones_the_config_opens(self):
        """Every pod takes OTLP logs: sidecars on loopback (for the apps of their own pod), the
        aggregator on the pod's IP, each exposing the ports it listens on."""
        for w in self.workloads:
            name = w["metadata"]["name"]
            config = self.config_of(w)
            self.assertIs(config.get("shipper.otlp.enabled"), True, name)
            (shipper,) = self.shipper_containers(w)
            ports = {p["name"]: p["containerPort"] for p in shipper["ports"]}
            grpc = config.get("shipper.otlp.grpc.server", "127.0.0.1:4317")
            http = config.get("shipper.otlp.http.server", "127.0.0.1:4318")
            self.assertEqual(ports.get("otlp-grpc"), port_of(grpc), name)
            self.assertEqual(ports.get("otlp-http"), port_of(http), name)
            host = "0.0.0.0" if name == "shipper-aggregator" else "127.0.0.1"
            self.assertEqual({grpc.rsplit(":", 1)[0], http.rsplit(":", 1)[0]}, {host}, name)

    def test_prometheus_scrapes_the_metrics_port_the_config_opens(self):
        for w in self.workloads:
            name = w["metadata"]["name"]
            config = self.config_of(w)
            annotations = w["spec"]["template"]["metadata"].get("annotations", {})
            (shipper,) = self.shipper_containers(w)
            ports = {p["name"]: p["containerPort"] for p in shipper["ports"]}
            self.assertEqual(annotations.get("prometheus.io/scrape"), "true", name)
            self.assertEqual(int(annotations["prometheus.io/port"]), ports["metrics"], name)
            self.assertEqual(config.get("http.port", 8282), ports["metrics"], name)
            self.assertEqual(config.get("http.host"), "0.0.0.0",
                             f"{name}: the metrics endpoint must listen on the pod's IP")


class Dockerfile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open("deploy/Dockerfile") as f:
            text = f.read().replace("\\\n", " ")
        cls.lines = [l.strip() for l in text.splitlines() if l.strip() and not l.lstrip().startswith("#")]
        cls.stages = []
        for line in cls.lines:
            if line.upper().startswith("FROM "):
                cls.stages.append([])
            cls.stages[-1].append(line)

    def instructions(self, stage, keyword):
        return [l[len(keyword):].strip() for l in self.stages[stage] if l.upper().startswith(keyword + " ")]

    def test_multi_stage_debian12_build_and_empty_runtime(self):
        self.assertEqual(len(self.stages), 2)
        self.assertRegex(self.stages[0][0], r"^FROM debian:12\S* AS build$")
        self.assertIn("./dev build", " ".join(self.instructions(0, "RUN")))
        self.assertIn("deploy/collect-runtime.sh", " ".join(self.instructions(0, "RUN")))
        self.assertEqual(self.stages[1][0], "FROM scratch")
        self.assertEqual(self.instructions(1, "COPY"), ["--from=build /rootfs/ /"])

    def test_runs_as_non_root_and_stops_with_sigterm(self):
        (user,) = self.instructions(1, "USER")
        self.assertRegex(user, r"^[1-9]\d*:[1-9]\d*$", "a numeric non-root uid:gid")
        self.assertEqual(self.instructions(1, "STOPSIGNAL"), ["SIGTERM"])

    def test_healthcheck_probes_the_health_port_of_the_default_config(self):
        (check,) = self.instructions(1, "HEALTHCHECK")
        self.assertIn('CMD ["/usr/local/bin/health_probe"', check)
        with open("deploy/shipper.yml") as f:
            health = flatten(yaml.safe_load(f))["shipper.server.health.address"]
        self.assertIn(f'"--address=127.0.0.1:{port_of(health)}"', check)
        self.assertIn(str(port_of(health)), self.instructions(1, "EXPOSE")[0].split())
        self.assertIn("shipper/server/health_probe", " ".join(self.instructions(0, "RUN")))

    def test_entrypoint_uses_the_default_config(self):
        self.assertEqual(self.instructions(1, "ENTRYPOINT"), ['["/usr/local/bin/shipper"]'])
        self.assertEqual(self.instructions(1, "CMD"), ['["-c", "/etc/shipper/shipper.yml"]'])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    SHIPPER = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=2)
