#!/usr/bin/python3
"""The release workflow (.github/workflows/release.yml) read and run here, for
packaging/qa/test-release. Debian's python3-yaml reads it.

  workflow.py scripts WORKFLOW DIR
      writes each `run:` step as DIR/<job>-<n>.sh (with the shell GitHub runs it with), for
      shellcheck; prints their names
  workflow.py check WORKFLOW SITE_DIR
      the parts the release depends on: the trigger, the build job's machine, the Pages upload
      of the folder scripts/release writes, the deploy job's permissions and environment
  workflow.py run WORKFLOW JOB [--value EXPR=VALUE|@FILE]... [--env NAME=VALUE]...
      runs JOB's `run:` steps here, in order, the way the runner does: bash --noprofile --norc
      -eo pipefail in the checkout, with the workflow's, job's and step's env: (each ${{ EXPR }}
      replaced by its --value; an expression without one is an error), GitHub's variables
      (GITHUB_REF_NAME and the rest, from --value github.*), and GITHUB_PATH, GITHUB_ENV and
      GITHUB_OUTPUT carried from step to step. `uses:` steps are GitHub's own actions and are
      listed, not run. The first failing step fails the job.
  workflow.py artifacts WORKFLOW
      after `run`: every upload-artifact/upload-pages-artifact path of the build job exists, and
      the files the notes job's `gh` command names are in the artifact it downloads
"""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    # YAML 1.1 reads the key `on` as True.
    if True in doc and "on" not in doc:
        doc["on"] = doc.pop(True)
    return doc


def shell_of(doc, job, step):
    shell = step.get("shell") or job.get("defaults", {}).get("run", {}).get("shell") \
        or doc.get("defaults", {}).get("run", {}).get("shell") or "bash"
    if shell != "bash":
        sys.exit(f"workflow.py: shell {shell!r}: only bash steps are run here")
    return ["bash", "--noprofile", "--norc", "-eo", "pipefail"]


def cmd_scripts(path, outdir):
    doc = load(path)
    os.makedirs(outdir, exist_ok=True)
    for jname, job in doc["jobs"].items():
        for n, step in enumerate(job.get("steps", []), 1):
            if "run" not in step:
                continue
            shell_of(doc, job, step)
            name = os.path.join(outdir, f"{jname}-{n}.sh")
            with open(name, "w") as f:
                f.write(f"#!/bin/bash\n# job {jname}, step {n}: {step.get('name', '')}\nset -eo pipefail\n")
                f.write(step["run"].rstrip("\n") + "\n")
            print(name)


def cmd_check(path, site):
    doc = load(path)
    ok = True

    def check(desc, cond):
        nonlocal ok
        print(("ok   " if cond else "NOT  ") + desc)
        ok = ok and bool(cond)

    on = doc.get("on", {})
    tags = (on.get("push") or {}).get("tags", []) if isinstance(on, dict) else []
    check("runs on a push of a v* tag", tags == ["v*"] and set(on) == {"push"})
    jobs = doc.get("jobs", {})
    build = jobs.get("build", {})
    container = build.get("container", {})
    check("build job: Debian 12 container (debian:bookworm), privileged",
          isinstance(container, dict) and container.get("image") == "debian:bookworm"
          and "--privileged" in str(container.get("options", "")))
    steps = build.get("steps", [])
    runs = [s["run"] for s in steps if "run" in s]
    check("build job: every run step is one command of scripts/, one of them scripts/release --tag --url",
          runs and all(r.strip().startswith("scripts/") and "\n" not in r.strip() for r in runs)
          and sum(r.strip().startswith("scripts/release --tag ") and " --url " in r for r in runs) == 1)
    release_step = next((s for s in steps if "scripts/release" in s.get("run", "")), {})
    check("the signing key comes from the secret COLLECTORD_SIGNING_KEY, in that step only",
          release_step.get("env", {}).get("COLLECTORD_SIGNING_KEY") == "${{ secrets.COLLECTORD_SIGNING_KEY }}"
          and sum("secrets." in yaml.safe_dump(s) for j in jobs.values() for s in j.get("steps", [])) == 1
          and "secrets." not in yaml.safe_dump({k: v for k, v in doc.items() if k != "jobs"}))
    pages = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-pages-artifact@")]
    check(f"upload-pages-artifact uploads {site}, the folder scripts/release writes",
          len(pages) == 1 and pages[0].get("with", {}).get("path") == site)
    deploy = jobs.get("deploy", {})
    check("deploy job: after build, permissions pages: write and id-token: write, environment github-pages",
          deploy.get("needs") == "build"
          and deploy.get("permissions") == {"pages": "write", "id-token": "write"}
          and (deploy.get("environment") or {}).get("name") == "github-pages"
          and any(str(s.get("uses", "")).startswith("actions/deploy-pages@") for s in deploy.get("steps", [])))
    check("the workflow's own token reads only, other than where a job says",
          doc.get("permissions") == {"contents": "read"})
    for jname, job in jobs.items():
        for s in job.get("steps", []):
            if "run" in s:
                check(f"{jname}: `{s.get('name', s['run'][:30])}` has no ${{{{ }}}} in its command (values come through env:)",
                      "${{" not in s["run"])
    return 0 if ok else 1


def resolve(text, values, where):
    def one(m):
        expr = m.group(1)
        if expr not in values:
            raise SystemExit(f"workflow.py: {where}: no value for ${{{{ {expr} }}}} here (give --value {expr}=...)")
        return values[expr]
    return EXPR.sub(one, str(text))


def read_env_file(path):
    env, lines = {}, open(path).read().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            i += 1
            body = []
            while i < len(lines) and lines[i] != delim:
                body.append(lines[i])
                i += 1
            env[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            env[name] = value
        i += 1
    return env


def cmd_run(path, jname, values, extra_env):
    with tempfile.TemporaryDirectory(prefix="workflow-runner-") as temp:
        return run_job(load(path), jname, values, extra_env, temp)


def run_job(doc, jname, values, extra_env, temp):
    job = doc["jobs"][jname]
    workspace = os.getcwd()
    # The runner's variables, from the github context given.
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("GITHUB_", "RUNNER_")) and k != "COLLECTORD_SIGNING_KEY"}
    # No toolchain on PATH beforehand: a step must put it there (GITHUB_PATH), as on a runner.
    base["PATH"] = ":".join(p for p in os.environ.get("PATH", "").split(":") if not p.startswith("/opt/swift"))
    ref_name = values.get("github.ref_name", "")
    repository = values.get("github.repository", "")
    base.update({
        "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": workspace,
        "GITHUB_EVENT_NAME": "push", "GITHUB_REF": f"refs/tags/{ref_name}", "GITHUB_REF_NAME": ref_name,
        "GITHUB_REF_TYPE": "tag", "GITHUB_REPOSITORY": repository,
        "GITHUB_REPOSITORY_OWNER": values.get("github.repository_owner", ""),
        "GITHUB_JOB": jname, "RUNNER_TEMP": temp, "RUNNER_OS": "Linux",
    })
    base.update(extra_env)
    carried_env, carried_path, outputs = {}, [], {}
    for key, value in (doc.get("env") or {}).items():
        base[key] = resolve(value, values, "env")
    for key, value in (job.get("env") or {}).items():
        base[key] = resolve(value, values, f"jobs.{jname}.env")
    for n, step in enumerate(job.get("steps", []), 1):
        label = step.get("name") or step.get("uses") or step.get("run", "").splitlines()[0]
        unknown = set(step) - {"name", "id", "uses", "with", "run", "env", "shell"}
        if unknown:
            sys.exit(f"workflow.py: step {n} ({label}): {', '.join(sorted(unknown))} not emulated here")
        if "uses" in step:
            print(f"== step {n}: uses {step['uses']} (GitHub's action: not run here)", flush=True)
            continue
        print(f"== step {n}: {label}", flush=True)
        step_values = dict(values)
        for sid, outs in outputs.items():
            for k, v in outs.items():
                step_values[f"steps.{sid}.outputs.{k}"] = v
        env = dict(base)
        env.update(carried_env)
        env["PATH"] = ":".join(list(reversed(carried_path)) + [base["PATH"]])
        for key, value in (step.get("env") or {}).items():
            env[key] = resolve(value, step_values, f"step {n} env {key}")
        if "${{" in step["run"]:
            sys.exit(f"workflow.py: step {n}: ${{{{ }}}} in the command itself; pass values through env:")
        files = {}
        for var in ("GITHUB_PATH", "GITHUB_ENV", "GITHUB_OUTPUT"):
            fd, files[var] = tempfile.mkstemp(dir=temp, prefix=var.lower())
            os.close(fd)
            env[var] = files[var]
        script = os.path.join(temp, f"step-{n}.sh")
        with open(script, "w") as f:
            f.write(step["run"])
        rc = subprocess.run(shell_of(doc, job, step) + [script], env=env, cwd=workspace).returncode
        if rc != 0:
            print(f"== step {n} failed with status {rc}", flush=True)
            return 1
        carried_path += [line for line in open(files["GITHUB_PATH"]).read().splitlines() if line]
        carried_env.update(read_env_file(files["GITHUB_ENV"]))
        if "id" in step:
            outputs[step["id"]] = read_env_file(files["GITHUB_OUTPUT"])
    print(f"== job {jname}: every step passed", flush=True)
    return 0


def cmd_artifacts(path):
    doc = load(path)
    ok = True
    uploads = {}
    for s in doc["jobs"]["build"].get("steps", []):
        uses = str(s.get("uses", ""))
        if uses.startswith(("actions/upload-artifact@", "actions/upload-pages-artifact@")):
            p = s.get("with", {}).get("path", "")
            exists = os.path.isdir(p) and os.listdir(p)
            print(("ok   " if exists else "NOT  ") + f"{uses.split('@')[0]}: {p} holds files")
            ok = ok and bool(exists)
            if uses.startswith("actions/upload-artifact@"):
                uploads[s["with"].get("name", "artifact")] = p
    notes = doc["jobs"].get("notes", {})
    downloaded = None
    for s in notes.get("steps", []):
        if str(s.get("uses", "")).startswith("actions/download-artifact@"):
            downloaded = uploads.get(s.get("with", {}).get("name"))
            print(("ok   " if downloaded else "NOT  ") + f"notes job downloads an artifact the build job uploads ({s.get('with', {}).get('name')})")
            ok = ok and bool(downloaded)
        elif "run" in s and downloaded:
            words = shlex.split(s["run"])
            if words[:3] != ["gh", "release", "create"]:
                continue
            files, i = [], 3
            while i < len(words):
                w = words[i]
                if w in ("--repo", "--title", "--target"):
                    i += 2
                    continue
                if w == "--notes-file":
                    files.append(words[i + 1])
                    i += 2
                    continue
                if not w.startswith(("-", "$")):
                    files.append(w)
                i += 1
            for f in files:
                found = glob.glob(os.path.join(downloaded, f))
                print(("ok   " if found else "NOT  ") + f"gh release create: {f} is in the artifact ({len(found)} file(s))")
                ok = ok and bool(found)
    return 0 if ok else 1


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) > 1 else 64
    cmd, path = argv[1], argv[2]
    if cmd == "scripts":
        cmd_scripts(path, argv[3])
        return 0
    if cmd == "check":
        return cmd_check(path, argv[3])
    if cmd == "artifacts":
        return cmd_artifacts(path)
    if cmd == "run":
        jname, rest = argv[3], argv[4:]
        values, extra = {}, {}
        while rest:
            opt, arg = rest[0], rest[1]
            rest = rest[2:]
            name, value = arg.split("=", 1)
            if opt == "--value":
                if value.startswith("@"):
                    value = open(value[1:]).read()
                values[name] = value
            elif opt == "--env":
                extra[name] = value
            else:
                sys.exit(f"workflow.py: unknown option {opt}")
        return cmd_run(path, jname, values, extra)
    sys.exit(f"workflow.py: unknown command {cmd}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
