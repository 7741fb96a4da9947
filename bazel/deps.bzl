"""kiln_dependencies(): the repositories kiln's BUILD files use. Call it from a WORKSPACE:

    local_repository(name = "kiln", path = "...")   # or http_archive
    load("@kiln//bazel:deps.bzl", "kiln_dependencies")
    kiln_dependencies()

A repository the workspace already defines (say its own rules_cc or googletest) is kept.
Online the pinned releases are downloaded; `--config=offline` (bazel/offline.bazelrc) takes
Debian's packages instead: bazel-rules-cc, googletest, libcli11-dev, nlohmann-json3-dev. LLVM 19 is the
system's in both modes (llvm-19-dev). The target table kiln_library() reads is generated from kiln's
sources when the workspace loads.
"""

load(":repos.bzl", "kiln_archive", "kiln_system_llvm", "kiln_target_table")

# Debian's rules_cc 0.0.4 calls use_cpp_toolchain(), which Bazel 4 lacks (Debian 12 ships 4.2.3):
# name the toolchain type it stands for. Applied online too, so Bazel 4 works either way.
_RULES_CC_PATCH = ("sed -i -e 's/, \"use_cpp_toolchain\")/)/' " +
                   "-e 's|toolchains = use_cpp_toolchain(),|toolchains = [\"@bazel_tools//tools/cpp:toolchain_type\"],|' " +
                   "cc/private/rules_impl/compiler_flag.bzl cc/private/rules_impl/cc_flags_supplier.bzl")

def _maybe(name, **kwargs):
    if not native.existing_rule(name):
        kiln_archive(name = name, **kwargs)

def kiln_dependencies():
    # the target table kiln_library() reads (defs.bzl), from kiln's sources
    if not native.existing_rule("kiln_targets"):
        kiln_target_table(name = "kiln_targets")

    # LLVM 19, which compiles the object targets' kernels inside kiln: the system's (llvm-19-dev)
    if not native.existing_rule("kiln_llvm"):
        kiln_system_llvm(name = "kiln_llvm")
    _maybe(
        name = "rules_cc",
        urls = ["https://github.com/bazelbuild/rules_cc/releases/download/0.0.4/rules_cc-0.0.4.tar.gz"],
        sha256 = "af6cc82d87db94585bceeda2561cb8a9d55ad435318ccb4ddfee18a43580fb5d",
        strip_prefix = "rules_cc-0.0.4",
        patch_cmds = [_RULES_CC_PATCH],
        offline_path = "/usr/share/bazel/rules/cc",
        offline_apt_package = "bazel-rules-cc",
    )
    _maybe(
        name = "com_google_googletest",
        urls = ["https://github.com/google/googletest/archive/refs/tags/release-1.12.1.tar.gz"],
        sha256 = "81964fe578e9bd7c94dfdb09c8e4d6e6759e19967e397dbea48d1c10e45d0df2",
        strip_prefix = "googletest-release-1.12.1",
        offline_path = "/usr/src/googletest",
        offline_apt_package = "googletest",
        offline_build_file = Label("//third_party:googletest_debian.BUILD"),
    )
    _maybe(
        name = "kiln_cli11",
        urls = ["https://github.com/CLIUtils/CLI11/archive/refs/tags/v2.3.2.tar.gz"],
        sha256 = "aac0ab42108131ac5d3344a9db0fdf25c4db652296641955720a4fbe52334e22",
        strip_prefix = "CLI11-2.3.2",
        build_file = Label("//third_party:cli11.BUILD"),
        offline_path = "/usr/include/CLI",
        offline_prefix = "include/CLI",
        offline_apt_package = "libcli11-dev",
    )
    _maybe(
        name = "kiln_nlohmann_json",
        urls = ["https://github.com/nlohmann/json/releases/download/v3.11.2/include.zip"],
        sha256 = "e5c7a9f49a16814be27e4ed0ee900ecd0092bfb7dbfca65b5a421b774dccaaed",
        build_file = Label("//third_party:nlohmann_json.BUILD"),
        offline_path = "/usr/include/nlohmann",
        offline_prefix = "include/nlohmann",
        offline_apt_package = "nlohmann-json3-dev",
    )
