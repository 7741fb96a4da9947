"""kiln_archive: a pinned download that `--repo_env=KILN_OFFLINE=1` swaps for a Debian copy.

Online (the default) it is an http_archive: urls, sha256, strip_prefix, build_file. Offline
(`--config=offline`, bazel/offline.bazelrc) it copies `offline_path` from an apt package into
`offline_prefix` of the repository and uses `offline_build_file` when given (else `build_file`).
`patch_cmds` run in both modes. The BUILD files that use the repository are the same either way.
"""

_ENV = "KILN_OFFLINE"

def _run(rctx, cmd, what):
    res = rctx.execute(cmd)
    if res.return_code != 0:
        fail("%s: %s failed: %s%s" % (rctx.name, what, res.stdout, res.stderr))

def _kiln_archive_impl(rctx):
    offline = rctx.os.environ.get(_ENV, "0") not in ("", "0", "false")
    build_file = rctx.attr.build_file
    if not offline:
        rctx.download_and_extract(
            url = rctx.attr.urls,
            sha256 = rctx.attr.sha256,
            stripPrefix = rctx.attr.strip_prefix,
        )
    else:
        src = rctx.path(rctx.attr.offline_path)
        if not src.exists:
            fail("%s: %s not found (offline); on Debian: apt-get install -y %s" %
                 (rctx.name, rctx.attr.offline_path, rctx.attr.offline_apt_package))
        dest = rctx.attr.offline_prefix or "."
        _run(rctx, ["mkdir", "-p", dest], "mkdir " + dest)

        # a copy, not a link: the tree may be patched without touching /usr
        _run(rctx, ["cp", "-R", "-L", str(src) + "/.", dest], "copying " + str(src))
        if rctx.attr.offline_build_file:
            build_file = rctx.attr.offline_build_file
    if build_file:
        for old in ["BUILD", "BUILD.bazel"]:
            if rctx.path(old).exists:
                _run(rctx, ["rm", "-f", old], "rm " + old)
        rctx.symlink(build_file, "BUILD.bazel")
    rctx.file("WORKSPACE", 'workspace(name = "%s")\n' % rctx.name)
    for cmd in rctx.attr.patch_cmds:
        _run(rctx, ["bash", "-c", cmd], "patch command '%s'" % cmd)

kiln_archive = repository_rule(
    implementation = _kiln_archive_impl,
    attrs = {
        "urls": attr.string_list(mandatory = True),
        "sha256": attr.string(mandatory = True),
        "strip_prefix": attr.string(),
        "build_file": attr.label(allow_single_file = True),
        "patch_cmds": attr.string_list(),
        "offline_path": attr.string(mandatory = True),
        "offline_prefix": attr.string(),
        "offline_apt_package": attr.string(),
        "offline_build_file": attr.label(allow_single_file = True),
    },
    environ = [_ENV],
)

def _kiln_target_table_impl(rctx):
    # kiln's one target table (generator/target/), printed by the table's printer compiled alone
    # with the host compiler: kiln itself is not built at loading time, and kiln_library() needs
    # the target names, file names and flags to declare its actions
    srcs = [rctx.path(src) for src in rctx.attr.srcs]
    root = rctx.path(rctx.attr.srcs[0]).dirname.dirname.dirname
    cxx = rctx.os.environ.get("CXX", "") or rctx.which("c++") or rctx.which("g++") or rctx.which("clang++")
    if not cxx:
        fail("kiln_targets: no C++ compiler (c++, g++ or clang++, or $CXX) to build kiln's target table with")
    _run(rctx, [str(cxx), "-std=c++20", "-O0", "-I", str(root)] + [str(s) for s in srcs] + ["-o", "table"],
         "compiling the target table")
    res = rctx.execute(["./table"])
    if res.return_code != 0:
        fail("kiln_targets: the target table's printer failed: " + res.stderr)
    rctx.file("table.bzl", "\"\"\"kiln's target table (`kiln targets --json`), generated.\"\"\"\n\n" +
                           "TARGETS = json.decode(\"\"\"" + res.stdout + "\"\"\")\n")
    rctx.file("BUILD.bazel", "exports_files([\"table.bzl\"])\n")
    rctx.file("WORKSPACE", 'workspace(name = "%s")\n' % rctx.name)

kiln_target_table = repository_rule(
    implementation = _kiln_target_table_impl,
    attrs = {
        "srcs": attr.label_list(
            default = [
                Label("//:generator/target/targets.cpp"),
                Label("//:generator/target/table_main.cpp"),
                Label("//:generator/target/target.h"),
            ],
            allow_files = True,
        ),
    },
    environ = ["CXX"],
)

_LLVM_BUILD = """\
# LLVM 19 as the system installs it (Debian: llvm-19-dev): the headers and the one shared library.
cc_library(
    name = "llvm",
    hdrs = glob(["include/**/*.h", "include/**/*.def", "include/**/*.inc", "include/**/*.gen"]),
    includes = ["include"],
    srcs = ["lib/libLLVM-19.so"],
    visibility = ["//visibility:public"],
)
"""

def _llvm_config(rctx, config, flag):
    res = rctx.execute([str(config), flag])
    if res.return_code != 0:
        fail("kiln_llvm: llvm-config %s failed: %s" % (flag, res.stderr))
    return res.stdout.strip()

def _kiln_system_llvm_impl(rctx):
    # no pinned download: LLVM is too large to fetch per workspace, and kiln links the shared
    # library the system has (online and offline alike)
    config = rctx.which("llvm-config-19") or rctx.path("/usr/lib/llvm-19/bin/llvm-config")
    if not config.exists:
        fail("kiln_llvm: LLVM 19 not found (no llvm-config-19); on Debian: apt-get install -y llvm-19-dev")
    version = _llvm_config(rctx, config, "--version")
    if not version.startswith("19."):
        fail("kiln_llvm: %s is LLVM %s, kiln needs 19" % (config, version))
    rctx.symlink(_llvm_config(rctx, config, "--includedir"), "include")
    rctx.symlink(_llvm_config(rctx, config, "--libdir") + "/libLLVM-19.so", "lib/libLLVM-19.so")
    rctx.file("BUILD.bazel", _LLVM_BUILD)
    rctx.file("WORKSPACE", 'workspace(name = "%s")\n' % rctx.name)

kiln_system_llvm = repository_rule(implementation = _kiln_system_llvm_impl)
