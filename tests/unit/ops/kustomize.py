"""A reader of the kustomize tree under deploy/kubernetes (no kubectl needed).

It resolves what each kustomization lists (resources, components, patches,
generator files) and collects the objects a build would start from.  It does not
apply patches; the tests check patches against their targets instead.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from tests.unit.ops.catalogue import REPO_ROOT

KUSTOMIZE_ROOT = REPO_ROOT / "deploy" / "kubernetes"
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


@dataclasses.dataclass
class Kustomization:
    directory: Path
    document: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.document.get("kind", "Kustomization"))

    def resource_paths(self) -> list[Path]:
        return [self.directory / entry for entry in self.document.get("resources", [])]

    def component_paths(self) -> list[Path]:
        return [self.directory / entry for entry in self.document.get("components", [])]

    def patch_paths(self) -> list[Path]:
        paths = [self.directory / patch["path"]
                 for patch in self.document.get("patches", []) if "path" in patch]
        paths += [self.directory / entry
                  for entry in self.document.get("patchesStrategicMerge", [])]
        return paths

    def patches(self) -> list[tuple[dict[str, Any] | None, list[dict[str, Any]]]]:
        """(target selector or None, patch documents) of every file patch."""
        found = []
        for patch in self.document.get("patches", []):
            if "path" in patch:
                found.append((patch.get("target"), load_documents(self.directory / patch["path"])))
        return found

    def generator_files(self) -> dict[str, dict[str, Path]]:
        """Generated ConfigMap/Secret name -> {key: source file}."""
        generated: dict[str, dict[str, Path]] = {}
        for field in ("configMapGenerator", "secretGenerator"):
            for generator in self.document.get(field, []):
                files = generated.setdefault(generator["name"], {})
                for entry in generator.get("files", []):
                    key, _, source = entry.rpartition("=")
                    source_path = self.directory / source
                    files[key or source_path.name] = source_path
        return generated


def load_documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc is not None]


def find_kustomization(directory: Path) -> Kustomization:
    for name in KUSTOMIZATION_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return Kustomization(directory, yaml.safe_load(candidate.read_text()))
    raise FileNotFoundError(f"{directory} has no kustomization file")


def all_kustomizations() -> list[Kustomization]:
    return [
        Kustomization(path.parent, yaml.safe_load(path.read_text()))
        for path in sorted(KUSTOMIZE_ROOT.rglob("kustomization.yaml"))
    ]


def build_inputs(kustomization: Kustomization) -> list[Kustomization]:
    """The kustomization and everything it pulls in, depth first."""
    seen: list[Kustomization] = [kustomization]
    for path in kustomization.resource_paths() + kustomization.component_paths():
        if path.is_dir():
            seen += build_inputs(find_kustomization(path))
    return seen


def objects(kustomization: Kustomization) -> list[dict[str, Any]]:
    """Every object listed as a resource file anywhere in the build (unpatched)."""
    found: list[dict[str, Any]] = []
    for part in build_inputs(kustomization):
        for path in part.resource_paths():
            if path.is_file():
                found += load_documents(path)
    return found


def pod_spec(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The pod spec of a workload object (Deployment, StatefulSet, Job, CronJob)."""
    spec = obj.get("spec", {})
    if obj.get("kind") == "CronJob":
        spec = spec.get("jobTemplate", {}).get("spec", {})
    template = spec.get("template")
    return template.get("spec") if isinstance(template, dict) else None


def containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec.get("initContainers", [])) + list(spec.get("containers", []))


# Strategic-merge keys of the lists these manifests patch (the Kubernetes API's own
# patchMergeKey for each field).
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "volumeClaimTemplates": None,  # replaced whole, like any list without a merge key
}


def strategic_merge(base: Any, patch: Any, field: str | None = None) -> Any:
    """A strategic merge patch of the subset of fields these manifests use."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for key, value in patch.items():
            merged[key] = strategic_merge(base[key], value, key) if key in base else value
        return merged
    key = _MERGE_KEYS.get(field or "")
    if isinstance(base, list) and isinstance(patch, list) and key:
        merged_list = list(base)
        for item in patch:
            index = next((i for i, old in enumerate(merged_list)
                          if isinstance(old, dict) and old.get(key) == item.get(key)), None)
            if index is None:
                merged_list.insert(0, item)
            else:
                merged_list[index] = strategic_merge(merged_list[index], item)
        return merged_list
    return patch


def _matches(obj: dict[str, Any], target: dict[str, Any] | None, patch: dict[str, Any]) -> bool:
    kind = (target or {}).get("kind") or patch.get("kind")
    name = (target or {}).get("name") or patch.get("metadata", {}).get("name")
    return obj.get("kind") == kind and obj.get("metadata", {}).get("name") == name


def rendered(kustomization: Kustomization) -> list[dict[str, Any]]:
    """The build's objects with every file patch applied, base first (no generators,
    name suffixes or namespaces: what the tests compare does not depend on them)."""
    built = objects(kustomization)
    for part in reversed(build_inputs(kustomization)):
        for target, documents in part.patches():
            for patch in documents:
                hits = [i for i, obj in enumerate(built) if _matches(obj, target, patch)]
                if not hits:
                    raise LookupError(f"patch of {part.directory} matches no object: "
                                      f"{patch.get('kind')}/{patch.get('metadata', {}).get('name')}")
                for index in hits:
                    built[index] = strategic_merge(built[index], patch)
    for part in build_inputs(kustomization):
        for replica in part.document.get("replicas", []):
            for obj in built:
                if obj.get("metadata", {}).get("name") == replica["name"] and "replicas" in obj.get(
                        "spec", {}):
                    obj["spec"]["replicas"] = replica["count"]
    return built


def generated(kustomization: Kustomization) -> dict[str, dict[str, Path]]:
    """Every generated ConfigMap/Secret of the build: name -> {key: file}."""
    found: dict[str, dict[str, Path]] = {}
    for part in build_inputs(kustomization):
        for name, files in part.generator_files().items():
            found.setdefault(name, {}).update(files)
    return found
