"""One repository rule that turns pkg-config packages into cc_library targets.

system_libs(name = "system", packages = {"glog": ["libglog"]}) defines @system//:glog with the
include paths, defines and link flags that `pkg-config --cflags --libs libglog` reports.
"""

def _pkg_config(ctx, args):
    result = ctx.execute(["pkg-config"] + args)
    if result.return_code != 0:
        fail("pkg-config %s failed: %s (install the -dev package: ./dev installs them)" %
             (" ".join(args), result.stderr))
    return result.stdout.strip().split(" ") if result.stdout.strip() else []

def _system_libs_impl(ctx):
    targets = []
    for name, modules in ctx.attr.packages.items():
        cflags = _pkg_config(ctx, ["--cflags"] + modules)
        libs = _pkg_config(ctx, ["--libs"] + modules) + ctx.attr.extra_linkopts.get(name, [])

        defines = [f[2:] for f in cflags if f.startswith("-D")]

        # Include dirs other than /usr/include become symlinks inside this repository, since
        # cc_library's `includes` (which propagates to dependents) takes relative paths only.
        includes = []
        for f in cflags:
            if f.startswith("-I") and f != "-I/usr/include":
                link = "include/%s_%d" % (name, len(includes))
                ctx.symlink(f[2:], link)
                includes.append(link)
        targets.append("""
cc_library(
    name = "{name}",
    defines = {defines},
    includes = {includes},
    linkopts = {libs},
    visibility = ["//visibility:public"],
)
""".format(name = name, defines = repr(defines), includes = repr(includes), libs = repr(libs)))
    ctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % ctx.name)
    ctx.file("BUILD.bazel", "".join(targets))

system_libs = repository_rule(
    implementation = _system_libs_impl,
    attrs = {
        "packages": attr.string_list_dict(mandatory = True),
        "extra_linkopts": attr.string_list_dict(),
    },
    local = True,
)
