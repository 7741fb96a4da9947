"""kiln_library(): precompiled kernels from .kiln specs, as a cc_library.

    load("@kiln//bazel:defs.bzl", "kiln_library")
    kiln_library(name = "hz", specs = ["a.kiln"], targets = ["cpu", "x86_64-avx2", "x86_64-avx512"])
    cc_binary(name = "app", srcs = ["app.cc"], deps = [":hz"])   # app.cc: #include "hz.h"

The host-built `kiln` (exec configuration) runs as separate actions with declared outputs, so
remote caching and remote execution work and a changed spec re-runs only its own actions:
  - per spec: `kiln gen --emit spec`, its header, dispatch source and part manifest;
  - per spec and target: `kiln gen --emit kernels`, its kernel file;
  - per library: `kiln gen --emit library`, <name>.h and <name>.manifest.json from the parts'
    manifests and the object kernel files (the library's manifest has the sizes, measured in the
    objects; a spec's has none, so the per-spec action compiles nothing).
The files are byte for byte those kiln_add_library() (CMake) writes for the same specs and targets.

`targets` defaults to what the target platform runs: the targets of its architecture
(`//bazel:x86_64`: an x86_64 platform and the Unix toolchain, --cpu=k8; `//bazel:aarch64`,
`//bazel:armv7`: platforms with those CPUs) and the portable ones, else the portable ones alone
(`kiln targets` lists them). An object target's kernels are kiln's objects, linked as they are
and only there; a C target's files are compiled with its flags. The dispatch picks a target's
variants at run time on CPUs that have its features. The C kernel files are compiled with -O3 in
every compilation mode (fastbuild, dbg, opt; dbg keeps -g); `--define=kiln_optimize_kernels=false`
gives them the mode's flags alone.
"""

load("@kiln_targets//:table.bzl", "TARGETS")
load("@rules_cc//cc:defs.bzl", "cc_library")

# kiln's targets, best first (the order kiln writes them in), from kiln's own table (`kiln targets
# --json`, generated when the workspace loads: bazel/repos.bzl): name, file name suffix, C flags,
# architecture; the GPU targets apart (their kernels are a source file the dispatch embeds, not
# compiled here)
_TARGETS = [(t["name"], t["symbol"] + t["extension"], t["c_flags"], t["arch"]) for t in TARGETS if not t.get("gpu", False)]
_GPU_TARGETS = [(t["name"], t["symbol"] + t["extension"], [], t["arch"]) for t in TARGETS if t.get("gpu", False)]

# the switch (bazel/BUILD.bazel) that says the target platform has an architecture, for each
# architecture kiln_library() links objects and passes ISA flags for
_ARCH_SETTINGS = {
    "x86_64": "//bazel:x86_64",
    "aarch64": "//bazel:aarch64",
    "armv7": "//bazel:armv7",
}

def _default_targets():
    by_arch = {
        str(Label(setting)): [t["name"] for t in TARGETS if t["arch"] in (arch, "any")]
        for arch, setting in _ARCH_SETTINGS.items()
    }
    by_arch["//conditions:default"] = [t["name"] for t in TARGETS if t["arch"] == "any"]
    return select(by_arch)

_DEFAULT_TARGETS = _default_targets()

def _where_arch(arch, value, elsewhere):
    """value where the target platform has architecture arch ("any": everywhere), else elsewhere."""
    if arch == "any":
        return value
    if arch not in _ARCH_SETTINGS:
        return elsewhere
    return select({str(Label(_ARCH_SETTINGS[arch])): value, "//conditions:default": elsewhere})

def _symbol(file_suffix):
    return file_suffix.rsplit(".", 1)[0]

def _part_name(path):
    """kiln's part name of a spec (generator/emit/library.h): its file name without .kiln, an identifier."""
    base = path.split("/")[-1]
    if len(base) > 5 and base.endswith(".kiln"):
        base = base[:-5]
    return "".join([c if (c.isalnum() or c == "_") else "_" for c in base.elems()])

def _declare(ctx, lib, name):
    return ctx.actions.declare_file(lib + "/" + lib + "_" + name)

def _kiln_gen_impl(ctx):
    lib = ctx.attr.library
    known = [t[0] for t in _TARGETS + _GPU_TARGETS]
    for t in ctx.attr.targets:
        if t not in known:
            fail("kiln_library(%s): unknown target '%s' (known: %s)" % (lib, t, ", ".join(sorted(known))))
        if len([x for x in ctx.attr.targets if x == t]) > 1:
            fail("kiln_library(%s): target '%s' given twice" % (lib, t))
    if not ctx.attr.targets:
        fail("kiln_library(%s): no targets" % lib)
    targets = [t for t in _TARGETS + _GPU_TARGETS if t[0] in ctx.attr.targets]
    target_list = "--target=" + ",".join([t[0] for t in targets])

    # kiln tune's database: the spec's and the kernels' actions read it (their opts), the library's does not
    tune = ["--tune-db=" + ctx.file.tune_db.path] if ctx.file.tune_db else []
    tune_inputs = [ctx.file.tune_db] if ctx.file.tune_db else []

    hdrs, dispatch, manifests, objects = [], [], [], []
    kernels = {_symbol(t[1]): [] for t in _TARGETS + _GPU_TARGETS}
    parts = {}
    for spec in ctx.files.specs:
        part = _part_name(spec.basename)
        if part in parts:
            fail("kiln_library(%s): %s and %s would both write files named %s_%s*: the specs of one library need different file names" %
                 (lib, parts[part], spec.short_path, lib, part))
        parts[part] = spec.short_path
        h = _declare(ctx, lib, part + ".h")
        d = _declare(ctx, lib, part + "_dispatch.cpp")
        m = _declare(ctx, lib, part + ".manifest.json")
        ctx.actions.run(
            executable = ctx.executable._kiln,
            arguments = ["gen", "--emit=spec", "--name=" + lib, "--out=" + h.dirname, target_list] + tune + [spec.path],
            inputs = [spec] + tune_inputs,
            outputs = [h, d, m],
            mnemonic = "KilnGenSpec",
            progress_message = "kiln gen %s: %s" % (lib, spec.short_path),
        )
        hdrs.append(h)
        dispatch.append(d)
        manifests.append(m)
        for name, suffix, _, _ in targets:
            symbol = _symbol(suffix)
            c = _declare(ctx, lib, part + "_" + suffix)
            ctx.actions.run(
                executable = ctx.executable._kiln,
                arguments = ["gen", "--emit=kernels", "--name=" + lib, "--out=" + c.dirname, "--target=" + name] + tune + [spec.path],
                inputs = [spec] + tune_inputs,
                outputs = [c],
                mnemonic = "KilnGenKernels",
                progress_message = "kiln gen %s: %s for %s" % (lib, spec.short_path, name),
            )
            kernels[symbol].append(c)
            if suffix.endswith(".o"):
                objects.append(c)

    # the library's files need the parts' manifests and the objects (its manifest's sizes are measured
    # there), not the specs (which are only named)
    umbrella = ctx.actions.declare_file(lib + "/" + lib + ".h")
    manifest = ctx.actions.declare_file(lib + "/" + lib + ".manifest.json")
    ctx.actions.run(
        executable = ctx.executable._kiln,
        # every file is in <lib>/ (_declare): the parts' manifests and the objects too
        arguments = [
            "gen",
            "--emit=library",
            "--name=" + lib,
            "--out=" + umbrella.dirname,
            "--kernels-dir=" + umbrella.dirname,
            target_list,
        ] + [s.path for s in ctx.files.specs],
        inputs = manifests + objects,
        outputs = [umbrella, manifest],
        mnemonic = "KilnGenLibrary",
        progress_message = "kiln gen %s: %s.h" % (lib, lib),
    )
    groups = {"kernels_" + symbol: depset(files) for symbol, files in kernels.items()}
    all_kernels = [f for t in targets for f in kernels[_symbol(t[1])]]
    return [
        DefaultInfo(files = depset([umbrella] + hdrs + dispatch + all_kernels + manifests + [manifest])),
        OutputGroupInfo(
            hdrs = depset([umbrella] + hdrs),
            dispatch = depset(dispatch),
            manifest = depset(manifests + [manifest]),
            **groups
        ),
    ]

_kiln_gen = rule(
    implementation = _kiln_gen_impl,
    attrs = {
        "library": attr.string(mandatory = True),
        "specs": attr.label_list(allow_files = [".kiln"], mandatory = True, allow_empty = False),
        "targets": attr.string_list(mandatory = True),
        "tune_db": attr.label(allow_single_file = True),
        "_kiln": attr.label(default = Label("//:kiln"), executable = True, cfg = "exec"),
    },
)

def _kiln_size_budget_impl(ctx):
    """kiln size --budget on the kernels as linked; its output is a header the library compiles with."""
    lib = ctx.attr.library
    manifest = [f for f in ctx.attr.files[OutputGroupInfo].manifest.to_list() if f.basename == lib + ".manifest.json"]
    measured = []
    for kernels, files in zip(ctx.attr.kernel_libs, ctx.attr.kernel_files):
        libraries = []
        for li in kernels[CcInfo].linking_context.linker_inputs.to_list():
            if li.owner == kernels.label:
                libraries += li.libraries
        archives = [f for l in libraries for f in [l.static_library, l.pic_static_library] if f]
        if archives:
            measured += archives
        elif libraries:  # an object target's library where it is linked: kiln's objects, as they are
            measured += files.files.to_list()
    out = ctx.actions.declare_file(ctx.label.name + ".h")
    ctx.actions.run_shell(
        command = 'out="$1"; shift; printf "/* " >"$out"; "$@" >>"$out" && printf " */\\n" >>"$out"',
        arguments = [out.path, ctx.executable._kiln.path, "size", "--budget", str(ctx.attr.budget), manifest[0].path] +
                    [f.path for f in measured],
        inputs = manifest + measured,
        tools = [ctx.executable._kiln],
        outputs = [out],
        mnemonic = "KilnSizeBudget",
        progress_message = "kiln size %s: size_budget %d bytes per target" % (lib, ctx.attr.budget),
    )
    return [DefaultInfo(files = depset([out]))]

_kiln_size_budget = rule(
    implementation = _kiln_size_budget_impl,
    attrs = {
        "library": attr.string(mandatory = True),
        "budget": attr.int(mandatory = True),
        "files": attr.label(mandatory = True),
        "kernel_libs": attr.label_list(providers = [CcInfo]),
        "kernel_files": attr.label_list(),
        "_kiln": attr.label(default = Label("//:kiln"), executable = True, cfg = "exec"),
    },
)

def _is_identifier(s):
    if not s or s[0].isdigit():
        return False
    for c in s.elems():
        if not (c.isalnum() or c == "_"):
            return False
    return True

def kiln_library(
        name,
        specs,
        targets = None,
        size_budget = None,
        tune_db = None,
        visibility = None,
        tags = [],
        testonly = False,
        **kwargs):
    """A cc_library `name` of the kernels of `specs`, compiled for `targets`.

    Args:
      name: the library: a C identifier, its C++ namespace and the header's name (name.h).
      specs: the .kiln spec files (labels); their file names must differ.
      targets: kiln targets (`kiln targets` lists them), may be a select();
        default: the targets of the platform's architecture and the portable ones.
      size_budget: the most bytes (code + data) each target's kernels may take as linked: the build
        fails, naming the target, its total and its largest kernels and variants, when one is over
        (`kiln size --budget`, on the kernel libraries' archives once compiled).
      tune_db: the database `kiln tune` wrote (a label): the kernels it lists get its opts
        (`kiln gen --tune-db`; nothing is timed, a stale entry is reported and ignored).
      visibility, tags, testonly: as for any rule, on every target this makes.
      **kwargs: more cc_library attributes for `name` (e.g. linkstatic, alwayslink).

    Also made: `<name>_files` (every generated file: `bazel build :<name>_files`).
    """
    if not _is_identifier(name):
        fail("kiln_library(%s): the name must be a C identifier (it is the namespace and the header)" % name)
    common = {"tags": tags, "testonly": testonly}
    _kiln_gen(
        name = name + "_files",
        library = name,
        specs = specs,
        targets = _DEFAULT_TARGETS if targets == None else targets,
        tune_db = tune_db,
        visibility = visibility,
        **common
    )
    for group in ["hdrs", "dispatch"] + ["kernels_" + _symbol(t[1]) for t in _TARGETS]:
        native.filegroup(
            name = "%s_%s" % (name, group),
            srcs = [":%s_files" % name],
            output_group = group,
            visibility = ["//visibility:private"],
            **common
        )

    # one library per target: a C target's kernel files with its flags (where its architecture is),
    # and -O3 in every compilation mode (//bazel:kernels_unoptimized turns that off); an object
    # target's objects, made by kiln, linked as they are
    kernel_libs = []

    # the targets a plain list names (a select() or the default: every target of the table, as
    # each library of a target the configuration does not pick has no files there, or none of the
    # platform's architecture); a cc_library of an object target it leaves out would have no srcs
    listed = None if targets == None or type(targets) == "select" else targets
    for tname, suffix, flags, arch in _TARGETS:
        if listed != None and tname not in listed:
            continue
        symbol = _symbol(suffix)
        files = [":%s_kernels_%s" % (name, symbol)]
        arch_flags = _where_arch(arch, flags, [])
        arch_files = _where_arch(arch, files, [])
        if suffix.endswith(".o"):
            # kiln's objects, linked as they are (where their architecture is)
            cc_library(
                name = "%s_kernels_%s_lib" % (name, symbol),
                srcs = arch_files,
                linkopts = ["-lm"],
                visibility = ["//visibility:private"],
                **common
            )
            kernel_libs.append(":%s_kernels_%s_lib" % (name, symbol))
            continue
        cc_library(
            name = "%s_kernels_%s_lib" % (name, symbol),
            srcs = files,
            copts = select({
                str(Label("//bazel:kernels_unoptimized")): [],
                "//conditions:default": ["-O3"],
            }) + arch_flags,
            linkopts = ["-lm"],
            deps = [Label("//:kernel_abi")],
            visibility = ["//visibility:private"],
            **common
        )
        kernel_libs.append(":%s_kernels_%s_lib" % (name, symbol))
    srcs = [":%s_dispatch" % name]
    if size_budget != None:
        # the check's output is a private header of the library: nothing that links it builds
        # while the kernels are over the budget
        if type(size_budget) != "int" or size_budget < 0:
            fail("kiln_library(%s): size_budget takes a number of bytes (got %r)" % (name, size_budget))
        _kiln_size_budget(
            name = name + "_size_budget",
            library = name,
            budget = size_budget,
            files = ":%s_files" % name,
            kernel_libs = kernel_libs,
            kernel_files = [":%s_kernels_%s" % (name, _symbol(t[1])) for t in _TARGETS],
            visibility = ["//visibility:private"],
            **common
        )
        srcs.append(":%s_size_budget" % name)
    cc_library(
        name = name,
        hdrs = [":%s_hdrs" % name],
        srcs = srcs,
        includes = [name],
        deps = [Label("//:runtime")] + kernel_libs,
        visibility = visibility,
        **dict(common, **kwargs)
    )
