"""The Kubernetes manifests: a consistent kustomize tree, valid objects, and the
behaviour docs/deployment.md and docs/reconciliation.md describe."""

from __future__ import annotations

import posixpath
import shlex
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate
import pytest

from tests.unit.ops import catalogue
from tests.unit.ops.kustomize import (
    KUSTOMIZE_ROOT,
    Kustomization,
    all_kustomizations,
    containers,
    find_kustomization,
    generated,
    load_documents,
    objects,
    pod_spec,
    rendered,
)

KUBERNETES_VERSION = "1.30"
BASE = KUSTOMIZE_ROOT / "base"
COMPONENT = KUSTOMIZE_ROOT / "components" / "reconciliation"
PROD = KUSTOMIZE_ROOT / "overlays" / "prod"
COMPONENT_OF_COMMAND = {"tally-collector": "collector"}  # every other command: reporting


def _ids(items: list[Kustomization]) -> list[str]:
    return [k.directory.relative_to(KUSTOMIZE_ROOT).as_posix() for k in items]


def _by_name(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} objects"
    return found[0]


def _prod() -> list[dict[str, Any]]:
    return rendered(find_kustomization(PROD))


# --- the tree --------------------------------------------------------------------------

def test_the_three_kustomizations_exist() -> None:
    assert {k.directory for k in all_kustomizations()} == {BASE, COMPONENT, PROD}


@pytest.mark.parametrize("kustomization", all_kustomizations(), ids=_ids(all_kustomizations()))
def test_everything_listed_exists(kustomization: Kustomization) -> None:
    for path in kustomization.resource_paths():
        assert path.exists(), path
        if path.is_dir():
            assert find_kustomization(path).kind == "Kustomization", path
    for path in kustomization.component_paths():
        assert find_kustomization(path).kind == "Component", path
    for path in kustomization.patch_paths():
        assert path.is_file(), path
    for files in kustomization.generator_files().values():
        for path in files.values():
            assert path.is_file(), path


@pytest.mark.parametrize("kustomization", all_kustomizations(), ids=_ids(all_kustomizations()))
def test_no_file_is_forgotten(kustomization: Kustomization) -> None:
    listed = set(kustomization.resource_paths()) | set(kustomization.patch_paths())
    for files in kustomization.generator_files().values():
        listed |= set(files.values())
    for path in kustomization.directory.iterdir():
        if path.name == "kustomization.yaml" or path.is_dir():
            continue
        assert path in listed, f"{path} is not listed by its kustomization"


def test_component_kind_and_prod_lists_it() -> None:
    assert find_kustomization(COMPONENT).kind == "Component"
    prod = find_kustomization(PROD)
    assert [p.resolve() for p in prod.component_paths()] == [COMPONENT.resolve()]
    assert BASE.resolve() in [p.resolve() for p in prod.resource_paths()]


def _resource_files() -> list[Path]:
    return sorted({path for k in all_kustomizations() for path in k.resource_paths()
                   if path.is_file()})


@pytest.mark.parametrize("path", _resource_files(),
                         ids=lambda p: p.relative_to(KUSTOMIZE_ROOT).as_posix())
def test_resources_are_valid_kubernetes_objects(path: Path) -> None:
    for document in load_documents(path):
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_rendered_prod_objects_are_valid() -> None:
    # The patches applied: a field a patch adds must be valid where it lands.
    for obj in _prod():
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_patches_change_only_existing_containers() -> None:
    prod = find_kustomization(PROD)
    objs = objects(prod)
    for part in [prod, find_kustomization(COMPONENT)]:
        for target, documents in part.patches():
            for patch in documents:
                kind = (target or {}).get("kind") or patch["kind"]
                name = (target or {}).get("name") or patch["metadata"]["name"]
                obj = _by_name(objs, kind, name)
                names = {c["name"] for c in containers(pod_spec(obj) or {})}
                for container in containers(pod_spec(patch) or {}):
                    assert container["name"] in names, (part.directory, container["name"])


# --- workloads -------------------------------------------------------------------------

def _workloads() -> list[dict[str, Any]]:
    return [o for o in _prod() if pod_spec(o) is not None]


def test_every_container_is_locked_down() -> None:
    workloads = _workloads()
    assert {o["kind"] for o in workloads} == {"Deployment", "StatefulSet", "CronJob"}
    for obj in workloads:
        spec = pod_spec(obj)
        assert spec is not None
        assert spec["securityContext"]["runAsNonRoot"] is True, obj["metadata"]["name"]
        for container in containers(spec):
            context = container["securityContext"]
            where = f"{obj['metadata']['name']}/{container['name']}"
            assert context["readOnlyRootFilesystem"] is True, where
            assert context["allowPrivilegeEscalation"] is False, where
            assert context["capabilities"]["drop"] == ["ALL"], where


def _mounts(spec: dict[str, Any], container: dict[str, Any],
            obj: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """mountPath -> the volume mounted there (a StatefulSet's claims included)."""
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for claim in (obj or {}).get("spec", {}).get("volumeClaimTemplates", []):
        volumes[claim["metadata"]["name"]] = {"persistentVolumeClaim": claim}
    return {m["mountPath"]: volumes[m["name"]] for m in container.get("volumeMounts", [])
            if m["name"] in volumes}


def _mounted_under(path: str, mounts: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    for mount_path, volume in mounts.items():
        if PurePosixPath(path).is_relative_to(mount_path):
            return mount_path, volume
    raise AssertionError(f"{path} is on no mounted volume")


def _config_file(container: dict[str, Any]) -> str:
    command = list(container.get("command", [])) + list(container.get("args", []))
    assert "--config-file" in command, container["name"]
    return command[command.index("--config-file") + 1]


def _config_source(container: dict[str, Any], spec: dict[str, Any]) -> Path:
    """The repository file a container's --config-file is generated from."""
    path = _config_file(container)
    _mount_path, volume = _mounted_under(path, _mounts(spec, container))
    assert "configMap" in volume, f"{path} is not on a ConfigMap"
    files = generated(find_kustomization(PROD))[volume["configMap"]["name"]]
    return files[posixpath.basename(path)]


def _component(container: dict[str, Any]) -> str:
    return COMPONENT_OF_COMMAND.get(container["command"][0], "reporting")


def test_commands_are_console_scripts_with_a_mounted_config() -> None:
    scripts = catalogue.console_scripts()
    for obj in _workloads():
        spec = pod_spec(obj)
        assert spec is not None
        for container in containers(spec):
            assert container["command"][0] in scripts, shlex.join(container["command"])
            source = _config_source(container, spec)
            catalogue.load_component_conf(_component(container), source)


def test_environment_overrides_name_real_options() -> None:
    for obj in _workloads():
        spec = pod_spec(obj)
        assert spec is not None
        for container in containers(spec):
            options = catalogue.option_names(_component(container))
            for variable in container.get("env", []):
                option = catalogue.env_option(variable["name"])
                if option is not None and variable["name"] != "OS_CLIENT_CONFIG_FILE":
                    assert option in options, (container["name"], variable["name"])


def _effective_value(container: dict[str, Any], spec: dict[str, Any], group: str,
                     option: str) -> str | None:
    for variable in container.get("env", []):
        if catalogue.env_option(variable["name"]) == (group, option):
            return variable.get("value")
    conf = catalogue.load_component_conf(_component(container), _config_source(container, spec))
    value = getattr(conf if group == "DEFAULT" else conf[group], option)
    return None if value is None else str(value)


# The files each command reads through its configuration.
FILE_OPTIONS = {
    "tally-reporting": [("api", "tokens_file"), ("sync", "clouds_file")],
    "tally-collector": [("collector", "token_file"), ("collector", "buffer_dir")],
    "tally-sync": [("sync", "token_file"), ("sync", "clouds_file")],
}


def test_files_the_configuration_names_are_mounted() -> None:
    checked = set()
    for obj in _workloads():
        spec = pod_spec(obj)
        assert spec is not None
        for container in spec["containers"]:
            for group, option in FILE_OPTIONS[container["command"][0]]:
                value = _effective_value(container, spec, group, option)
                assert value, (container["name"], group, option)
                _mounted_under(value, _mounts(spec, container, obj))
                checked.add((container["command"][0], group, option))
    assert len(checked) == sum(len(options) for options in FILE_OPTIONS.values())


# --- reporting -------------------------------------------------------------------------

def _reporting() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    deployment = _by_name(_prod(), "Deployment", "tally-reporting")
    spec = pod_spec(deployment)
    assert spec is not None
    (container,) = [c for c in spec["containers"] if c["name"] == "reporting"]
    return deployment, spec, container


def test_reporting_probes_health_endpoints_on_the_configured_port() -> None:
    _deployment, spec, container = _reporting()
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    port = ports[container["readinessProbe"]["httpGet"]["port"]]
    assert ports[container["livenessProbe"]["httpGet"]["port"]] == port
    bind = _effective_value(container, spec, "api", "bind")
    assert bind is not None
    host, _, bind_port = bind.rpartition(":")
    assert int(bind_port) == port
    assert host in {"0.0.0.0", "::", "[::]"}, "the API must listen beyond loopback in a pod"
    service = _by_name(_prod(), "Service", "tally-reporting")
    assert service["spec"]["ports"][0]["targetPort"] in ports
    assert service["spec"]["selector"].items() <= _deployment["spec"]["template"]["metadata"][
        "labels"].items()


def test_reporting_migrates_the_database_first() -> None:
    _deployment, spec, _container = _reporting()
    (init,) = spec["initContainers"]
    assert init["command"][0] == "tally-manage"
    assert init["command"][-2:] == ["db", "upgrade"]


def test_worker_timeout_covers_a_sync_run() -> None:
    # The sync route is held open for up to [sync] budget_s + 15 s (docs/deployment.md,
    # Timeouts); gunicorn must not kill the worker first.
    _deployment, spec, container = _reporting()
    timeout = _effective_value(container, spec, "api", "timeout")
    budget = _effective_value(container, spec, "sync", "budget_s")
    assert timeout is not None and budget is not None
    assert float(timeout) > float(budget) + 15


def test_prod_scales_and_sizes_the_api() -> None:
    deployment, _spec, container = _reporting()
    assert deployment["spec"]["replicas"] >= 2
    assert container["resources"]["requests"]["cpu"]
    assert container["resources"]["limits"]["memory"]


# --- collector -------------------------------------------------------------------------

def test_collector_buffer_is_on_a_persistent_volume() -> None:
    statefulset = _by_name(_prod(), "StatefulSet", "tally-collector")
    spec = pod_spec(statefulset)
    assert spec is not None
    (container,) = spec["containers"]
    claims = {t["metadata"]["name"] for t in statefulset["spec"]["volumeClaimTemplates"]}
    buffer_dir = _effective_value(container, spec, "collector", "buffer_dir")
    assert buffer_dir is not None
    mount = next(m for m in container["volumeMounts"]
                 if PurePosixPath(buffer_dir).is_relative_to(m["mountPath"]))
    assert mount["name"] in claims, "the buffer must survive restarts: a PVC, not emptyDir"
    assert statefulset["spec"]["replicas"] == 1


def test_prod_names_the_collector_cloud_and_its_metrics_are_reachable() -> None:
    statefulset = _by_name(_prod(), "StatefulSet", "tally-collector")
    spec = pod_spec(statefulset)
    assert spec is not None
    (container,) = spec["containers"]
    env = {v["name"]: v.get("value") for v in container["env"]}
    assert env.get("TALLY_OSC_CLOUD"), "the collector refuses to start without a cloud name"
    bind = _effective_value(container, spec, "collector", "metrics_bind")
    assert bind is not None
    assert int(bind.rpartition(":")[2]) in {p["containerPort"] for p in container["ports"]}


# --- reconciliation --------------------------------------------------------------------

def test_sync_cronjob_every_ten_minutes_without_overlap() -> None:
    cronjob = _by_name(_prod(), "CronJob", "tally-sync")
    assert cronjob["spec"]["schedule"] == "*/10 * * * *"
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    spec = pod_spec(cronjob)
    assert spec is not None
    (container,) = spec["containers"]
    assert container["command"][0] == "tally-sync"
    api_url = _effective_value(container, spec, "sync", "api_url")
    assert api_url is not None
    service = _by_name(_prod(), "Service", "tally-reporting")
    assert api_url == f"http://{service['metadata']['name']}:{service['spec']['ports'][0]['port']}"


def test_cloud_clouds_yaml_secret_is_pinned_by_os_client_config_file() -> None:
    _deployment, spec, container = _reporting()
    env = {v["name"]: v.get("value") for v in container["env"]}
    clouds_yaml = env["OS_CLIENT_CONFIG_FILE"]
    mount_path, volume = _mounted_under(clouds_yaml, _mounts(spec, container))
    assert mount_path == "/etc/openstack"
    assert "secret" in volume
    assert posixpath.basename(clouds_yaml) == "clouds.yaml"


def test_tally_clouds_file_is_generated_by_the_overlay() -> None:
    _deployment, spec, container = _reporting()
    clouds_file = _effective_value(container, spec, "sync", "clouds_file")
    assert clouds_file is not None
    _mount_path, volume = _mounted_under(clouds_file, _mounts(spec, container))
    source = generated(find_kustomization(PROD))[volume["configMap"]["name"]][
        posixpath.basename(clouds_file)]
    from reporting.sync.clouds import load_clouds_file

    assert load_clouds_file(str(source))


def test_base_alone_has_no_reconciliation() -> None:
    base = rendered(find_kustomization(BASE))
    assert not [o for o in base if o["kind"] == "CronJob"]
    _by_name(base, "Deployment", "tally-reporting")
