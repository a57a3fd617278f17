#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# tests/deploy/k8s-validate.py FILE...: check Kubernetes manifests against
# the Kubernetes API schema, offline.
#
# Debian 12's kubectl (kubernetes-client 1.20), like any kubectl, validates
# only against a server's OpenAPI document, and no cluster is reachable
# here. Debian's python3-kubernetes holds the same schema as code: one
# class per API type, generated from the Kubernetes OpenAPI specification
# (API 1.22 in Debian 12), each with its fields' JSON names and types. This
# walks every document against it: an unknown field, a value of the wrong
# type, a kind or apiVersion the API does not have, or a required field
# missing (the classes refuse it) is an error, named by its path.
#
# The one field newer than that schema is named here with the version that
# brought it, and checked for its type: hostUsers (PodSpec, Kubernetes
# 1.25, the Pod's user namespace). Nothing else newer is accepted.
#
# Exit status 0 when every document of every file is valid; 1 with one line
# per problem (FILE: DOC: PATH: reason); 2 when python3-kubernetes or
# python3-yaml is missing.
import sys

try:
    import kubernetes.client as kc
    import yaml
except ImportError as e:
    print(f"k8s-validate: {e.name} is missing (apt-get install python3-kubernetes python3-yaml)",
          file=sys.stderr)
    sys.exit(2)

KINDS = {
    ("v1", "Pod"): "V1Pod",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
    ("batch/v1", "Job"): "V1Job",
}
# (class, JSON field): (type, the Kubernetes version that added it)
NEWER = {("V1PodSpec", "hostUsers"): ("bool", "1.25")}


def check(value, typ, path, errors):
    if value is None:
        return
    if typ.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{path}: a list is expected, not {type(value).__name__}")
            return
        for i, v in enumerate(value):
            check(v, typ[5:-1], f"{path}[{i}]", errors)
    elif typ.startswith("dict("):
        if not isinstance(value, dict):
            errors.append(f"{path}: a map is expected, not {type(value).__name__}")
            return
        inner = typ[typ.index(",") + 1:-1].strip()
        for k, v in value.items():
            if not isinstance(k, str):
                errors.append(f"{path}: key {k!r} is not a string")
            check(v, inner, f"{path}.{k}", errors)
    elif typ == "str":
        if not isinstance(value, str):
            errors.append(f"{path}: a string is expected, not {type(value).__name__} {value!r}")
    elif typ == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append(f"{path}: an integer is expected, not {value!r}")
    elif typ == "float":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            errors.append(f"{path}: a number is expected, not {value!r}")
    elif typ == "bool":
        if not isinstance(value, bool):
            errors.append(f"{path}: true or false is expected, not {value!r}")
    elif typ in ("object", "datetime", "date"):
        pass
    else:
        cls = getattr(kc, typ, None)
        if cls is None:
            errors.append(f"{path}: the schema has no type {typ}")
            return
        if not isinstance(value, dict):
            errors.append(f"{path}: an object ({typ}) is expected, not {type(value).__name__}")
            return
        by_json = {j: p for p, j in cls.attribute_map.items()}
        for k, v in value.items():
            if k in by_json:
                check(v, cls.openapi_types[by_json[k]], f"{path}.{k}", errors)
            elif (typ, k) in NEWER:
                check(v, NEWER[(typ, k)][0], f"{path}.{k}", errors)
            else:
                errors.append(f"{path}: unknown field {k!r} in {typ}")


def required(doc, cls_name):
    """The classes refuse a required field that is missing: build the object to see."""
    client = kc.ApiClient()

    class Response:
        data = yaml.safe_dump(doc)

    # Only the fields the schema knows: the newer ones were checked above.
    def strip(v, typ):
        if isinstance(v, list) and typ.startswith("list["):
            return [strip(x, typ[5:-1]) for x in v]
        cls = getattr(kc, typ, None)
        if isinstance(v, dict) and cls is not None:
            by_json = {j: p for p, j in cls.attribute_map.items()}
            return {k: strip(x, cls.openapi_types[by_json[k]]) for k, x in v.items() if k in by_json}
        return v
    try:
        client._ApiClient__deserialize(strip(doc, cls_name), cls_name)
    except (ValueError, TypeError) as e:
        return str(e)
    return None


def main():
    if len(sys.argv) < 2:
        print("usage: k8s-validate.py FILE...", file=sys.stderr)
        return 2
    bad = 0
    for f in sys.argv[1:]:
        with open(f) as fh:
            docs = [d for d in yaml.safe_load_all(fh) if d is not None]
        if not docs:
            print(f"{f}: no document", file=sys.stderr)
            bad += 1
        for i, doc in enumerate(docs, 1):
            name = f"{f}: document {i}"
            if not isinstance(doc, dict):
                print(f"{name}: not an object", file=sys.stderr)
                bad += 1
                continue
            key = (doc.get("apiVersion"), doc.get("kind"))
            cls_name = KINDS.get(key)
            if cls_name is None:
                print(f"{name}: apiVersion {key[0]!r} kind {key[1]!r} is not one this checker knows",
                      file=sys.stderr)
                bad += 1
                continue
            errors = []
            check(doc, cls_name, key[1], errors)
            why = required(doc, cls_name)
            if why:
                errors.append(f"{key[1]}: {why}")
            for e in errors:
                print(f"{name}: {e}", file=sys.stderr)
            bad += len(errors)
            if not errors:
                print(f"{name}: {key[1]} {doc.get('metadata', {}).get('name') or doc.get('metadata', {}).get('generateName', '')} is valid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
