"""fuzz_target: one libFuzzer entry point, its corpus replay test and its fuzzer binary."""

def fuzz_target(name, srcs, deps):
    """Defines <name>_lib (the entry point), <name>_corpus_test (replays corpus/<name> and
    crashes/<name> in every `bazel test //...`) and <name>_fuzzer (manual: built by
    `./dev fuzz` with --config=fuzz, which compiles with clang)."""
    native.cc_library(
        name = name + "_lib",
        testonly = True,
        srcs = srcs,
        deps = deps,
        alwayslink = True,
    )
    native.cc_test(
        name = name + "_corpus_test",
        srcs = ["corpus_replay_test.cc"],
        args = ["tests/fuzz/corpus/" + name, "tests/fuzz/crashes/" + name],
        data = native.glob(["corpus/%s/*" % name, "crashes/%s/*" % name]),
        deps = [":" + name + "_lib", "@system//:gtest"],
    )
    native.cc_binary(
        name = name + "_fuzzer",
        testonly = True,
        linkopts = ["-fsanitize=fuzzer"],
        tags = ["manual"],
        deps = [":" + name + "_lib"],
    )
