#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Validates Kubernetes objects and mig-parted configs that migbench emits, without a cluster.

    k8s_validate.py [--forbid TEXT]... FILE.yaml...

Every YAML document with a `kind` is built into the Kubernetes API model of its kind from
Debian's python3-kubernetes (kubernetes.client.models): a field the API does not have, a value
of the wrong type, or a missing required field is an error, as the API server would answer.
On top of the models, the rules the API server applies and the models do not: object names and
namespaces (DNS-1123), label and annotation keys and values, container, volume and env names,
resource names (extended resources need a domain prefix; the name part is a qualified name, so
"nvidia.com/mig-1g.10gb+me" is refused) and quantities, volume mounts that name a volume, and
Indexed Job limits. A ConfigMap's `config.yaml` holding `mig-configs` is checked against
mig-parted's format (version v1; mig-configs: NAME: [{devices: all | [i, ...], mig-enabled,
mig-devices: {PROFILE: COUNT}}]); so is a FILE that is itself a mig-parted config. No string
may contain a --forbid TEXT (e.g. the build directory). Exit status 0 when all is valid, else 1
with one line per problem.
"""
import re
import sys

import yaml
from kubernetes import client

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QNAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
CM_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
QUANTITY = re.compile(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$")
STANDARD_RESOURCES = {"cpu", "memory", "ephemeral-storage", "pods", "storage"}
MIG_PROFILE = re.compile(r"^([0-9]+c\.)?[0-9]+g\.[0-9]+gb(\+[a-z]+)*$")
KINDS = {"ConfigMap": "V1ConfigMap", "Job": "V1Job"}

problems = []


def bad(where, what):
    problems.append(f"{where}: {what}")


def build(data, kind, where):
    """The model of type `kind` (an openapi_types string) from data; problems recorded."""
    if kind.startswith("list["):
        if not isinstance(data, list):
            return bad(where, f"a list was expected, not {type(data).__name__}")
        return [build(v, kind[5:-1], f"{where}[{i}]") for i, v in enumerate(data)]
    if kind.startswith("dict("):
        if not isinstance(data, dict):
            return bad(where, f"a map was expected, not {type(data).__name__}")
        inner = kind[kind.index(",") + 1 : -1].strip()
        return {k: build(v, inner, f"{where}.{k}") for k, v in data.items()}
    prim = {"str": str, "int": int, "bool": bool, "float": (int, float)}
    if kind in prim:
        ok = isinstance(data, prim[kind]) and not (kind == "int" and isinstance(data, bool))
        # A quantity (resources) is a string in the models and a number or a string on the wire.
        ok = ok or (kind == "str" and ".resources." in where and isinstance(data, (int, float))
                    and not isinstance(data, bool))
        if not ok:
            bad(where, f"{kind} expected, got {data!r}")
        return data
    if kind == "object":
        return data
    cls = getattr(client.models, kind, None)
    if cls is None:
        return bad(where, f"unknown model {kind}")
    if not isinstance(data, dict):
        return bad(where, f"an object ({kind}) was expected, not {type(data).__name__}")
    by_json = {j: a for a, j in cls.attribute_map.items()}
    kwargs = {}
    for key, value in data.items():
        if key not in by_json:
            bad(where, f"field '{key}' is not part of {kind}")
            continue
        attr = by_json[key]
        kwargs[attr] = build(value, cls.openapi_types[attr], f"{where}.{key}")
    try:
        return cls(**kwargs)
    except ValueError as e:  # a required field missing, or a value the model refuses
        bad(where, str(e))


def qualified_name(where, key, need_prefix=False):
    prefix, _, name = key.rpartition("/")
    if need_prefix and not prefix:
        bad(where, f"'{key}': an extended resource needs a domain prefix (nvidia.com/...)")
    if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        bad(where, f"'{key}': prefix '{prefix}' is not a DNS subdomain")
    if len(name) > 63 or not QNAME.match(name):
        bad(where, f"'{key}': name part '{name}' must be alphanumerics, '-', '_' or '.', "
                   "starting and ending alphanumeric, at most 63 characters")


def check_meta(where, meta, kind):
    name = meta.get("name", "")
    limit = 63 if kind == "Job" else 253  # a Job's name becomes a pod label value
    if len(name) > limit or not DNS_SUBDOMAIN.match(name):
        bad(where, f"metadata.name '{name}' is not a DNS-1123 name of at most {limit}")
    ns = meta.get("namespace")
    if ns is not None and (len(ns) > 63 or not DNS_LABEL.match(ns)):
        bad(where, f"metadata.namespace '{ns}' is not a DNS-1123 label")
    for field in ("labels", "annotations"):
        for k, v in (meta.get(field) or {}).items():
            qualified_name(f"{where}.metadata.{field}", k)
            if field == "labels" and (len(str(v)) > 63 or not LABEL_VALUE.match(str(v))):
                bad(where, f"label value '{v}' is not valid")


def check_pod(where, spec):
    volumes = {v.get("name") for v in spec.get("volumes") or []}
    for v in volumes:
        if not v or not DNS_LABEL.match(v):
            bad(where, f"volume name '{v}' is not a DNS-1123 label")
    if spec.get("restartPolicy") not in ("Never", "OnFailure"):
        bad(where, "a Job's pods need restartPolicy Never or OnFailure")
    for c in spec.get("containers") or []:
        cw = f"{where}.containers[{c.get('name')}]"
        if not DNS_LABEL.match(c.get("name", "")):
            bad(cw, "container name is not a DNS-1123 label")
        if not c.get("image"):
            bad(cw, "no image")
        for e in c.get("env") or []:
            if not ENV_NAME.match(e.get("name", "")):
                bad(cw, f"env name '{e.get('name')}' is not valid")
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in volumes:
                bad(cw, f"volumeMount '{m.get('name')}' names no volume")
            if not str(m.get("mountPath", "")).startswith("/"):
                bad(cw, f"mountPath '{m.get('mountPath')}' is not absolute")
        for field in ("limits", "requests"):
            for k, v in ((c.get("resources") or {}).get(field) or {}).items():
                if k in STANDARD_RESOURCES or k.startswith("hugepages-"):
                    continue
                qualified_name(f"{cw}.resources.{field}", k, need_prefix=True)
                if "kubernetes.io/" in k:
                    bad(cw, f"'{k}': *kubernetes.io is not for extended resources")
                if not QUANTITY.match(str(v)) or (field == "limits" and float(v) != int(float(v))):
                    bad(cw, f"'{k}: {v}': extended resources take whole quantities")


def check_job(where, job):
    spec = job.get("spec") or {}
    if spec.get("completionMode") == "Indexed":
        n = spec.get("completions")
        if not isinstance(n, int) or n < 1 or n > 100000:
            bad(where, "an Indexed Job needs completions 1..100000")
    if (spec.get("parallelism") or 0) < 0 or (spec.get("backoffLimit") or 0) < 0:
        bad(where, "parallelism and backoffLimit are not negative")
    check_pod(f"{where}.spec.template.spec", (spec.get("template") or {}).get("spec") or {})


def check_mig_parted(where, cfg):
    if not isinstance(cfg, dict) or cfg.get("version") != "v1":
        return bad(where, "mig-parted: version v1 expected")
    extra = set(cfg) - {"version", "mig-configs"}
    if extra:
        bad(where, f"mig-parted: unknown top-level fields {sorted(extra)}")
    configs = cfg.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        return bad(where, "mig-parted: mig-configs must map names to lists of entries")
    for name, entries in configs.items():
        cw = f"{where}: mig-configs.{name}"
        if not isinstance(entries, list) or not entries:
            bad(cw, "a list of entries expected")
            continue
        for i, e in enumerate(entries):
            ew = f"{cw}[{i}]"
            if not isinstance(e, dict):
                bad(ew, "an entry must be a map")
                continue
            extra = set(e) - {"devices", "mig-enabled", "mig-devices", "device-filter"}
            if extra:
                bad(ew, f"unknown fields {sorted(extra)}")
            d = e.get("devices")
            if d != "all" and not (isinstance(d, list) and d and
                                   all(isinstance(x, int) and not isinstance(x, bool) and x >= 0
                                       for x in d)):
                bad(ew, f"devices must be 'all' or a list of GPU indices, not {d!r}")
            if not isinstance(e.get("mig-enabled"), bool):
                bad(ew, "mig-enabled must be true or false")
            md = e.get("mig-devices", {})
            if not isinstance(md, dict):
                bad(ew, "mig-devices must map profiles to counts")
                continue
            if md and e.get("mig-enabled") is False:
                bad(ew, "mig-devices given with mig-enabled false")
            for p, n in md.items():
                if not MIG_PROFILE.match(str(p)):
                    bad(ew, f"'{p}' is not a MIG profile name")
                if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                    bad(ew, f"'{p}': count {n!r} is not a whole number")


def strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for k, v in x.items():
            yield k
            yield from strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from strings(v)


def main(argv):
    forbid, files = [], []
    it = iter(argv)
    for a in it:
        if a == "--forbid":
            forbid.append(next(it))
        else:
            files.append(a)
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    n = 0
    for path in files:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
        for i, doc in enumerate(docs):
            where = f"{path}#{i}"
            for s in strings(doc):
                for t in forbid:
                    if t in s:
                        bad(where, f"holds '{t}' (a path of the machine that wrote it)")
            if isinstance(doc, dict) and "mig-configs" in doc:
                check_mig_parted(where, doc)
                n += 1
                continue
            kind = doc.get("kind") if isinstance(doc, dict) else None
            if kind not in KINDS:
                bad(where, f"kind {kind!r}: not one migbench emits")
                continue
            build(doc, KINDS[kind], f"{where} ({kind})")
            check_meta(where, doc.get("metadata") or {}, kind)
            if kind == "Job":
                check_job(where, doc)
            for key, text in (doc.get("data") or {}).items():
                if len(key) > 253 or not CM_KEY.match(key):
                    bad(where, f"ConfigMap key '{key}' is not valid")
                if key == "config.yaml":
                    check_mig_parted(f"{where}.data.config.yaml", yaml.safe_load(text))
            n += 1
    for p in problems:
        print(p)
    if not problems:
        print(f"{n} objects valid")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
