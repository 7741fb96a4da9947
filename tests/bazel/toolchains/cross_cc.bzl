"""A C++ toolchain for Debian's GNU cross compilers (g++-aarch64-linux-gnu and the like), so that a
workspace can cross-build with Bazel 4: the cross compiler's programs, its sysroot's include
directories, and a link that adds the C++ library. Register it with --extra_toolchains and build
with --incompatible_enable_cc_toolchain_resolution --platforms=<a platform of its CPU>."""

load("@bazel_tools//tools/build_defs/cc:action_names.bzl", "ACTION_NAMES")
load("@bazel_tools//tools/cpp:cc_toolchain_config_lib.bzl", "feature", "flag_group", "flag_set", "tool_path")

_LINK_ACTIONS = [
    ACTION_NAMES.cpp_link_executable,
    ACTION_NAMES.cpp_link_dynamic_library,
    ACTION_NAMES.cpp_link_nodeps_dynamic_library,
]

_COMPILE_ACTIONS = [
    ACTION_NAMES.c_compile,
    ACTION_NAMES.cpp_compile,
    ACTION_NAMES.assemble,
    ACTION_NAMES.preprocess_assemble,
]

def _impl(ctx):
    triple = ctx.attr.triple
    tools = ["ar", "cpp", "gcc", "gcov", "ld", "nm", "objdump", "strip"]
    tool_paths = [tool_path(name = t, path = "/usr/bin/%s-%s" % (triple, t)) for t in tools]
    gcc = "/usr/lib/gcc-cross/%s/%s" % (triple, ctx.attr.gcc_version)
    sysroot = "/usr/%s" % triple
    features = [
        feature(
            name = "cross_compile_flags",
            enabled = True,
            flag_sets = [flag_set(
                actions = _COMPILE_ACTIONS,
                # the paths as Bazel gives them, not resolved through its symlinks (the header
                # check compares the dependency file's paths with the declared headers)
                flag_groups = [flag_group(flags = [
                    "-no-canonical-prefixes",
                    "-fno-canonical-system-headers",
                    "-fPIC",
                    "-ffunction-sections",
                    "-fdata-sections",
                ])],
            )],
        ),
        feature(
            name = "cross_link_flags",
            enabled = True,
            flag_sets = [flag_set(
                actions = _LINK_ACTIONS,
                flag_groups = [flag_group(flags = ["-lstdc++", "-lm", "-Wl,--gc-sections"])],
            )],
        ),
        feature(name = "supports_pic", enabled = True),
        feature(name = "opt"),
        feature(name = "dbg"),
    ]
    return cc_common.create_cc_toolchain_config_info(
        ctx = ctx,
        toolchain_identifier = triple,
        host_system_name = "x86_64-linux-gnu",
        target_system_name = triple,
        target_cpu = ctx.attr.cpu,
        target_libc = "glibc",
        compiler = "gcc",
        abi_version = "gcc",
        abi_libc_version = "glibc",
        tool_paths = tool_paths,
        features = features,
        cxx_builtin_include_directories = [gcc, sysroot + "/include", "/usr/include"],
    )

cross_cc_toolchain_config = rule(
    implementation = _impl,
    attrs = {
        "triple": attr.string(mandatory = True),  # "aarch64-linux-gnu": the programs' prefix
        "cpu": attr.string(mandatory = True),  # Bazel's name of the CPU: "aarch64"
        "gcc_version": attr.string(default = "12"),  # Debian 12's cross GCC
    },
    provides = [CcToolchainConfigInfo],
)
