"""cc_grpc_proto: C++ (and gRPC) code from .proto files with the system protoc and grpc_cpp_plugin.

Bazel 4's proto_library needs downloads; this macro runs Debian's protoc in a genrule instead.
"""

def cc_grpc_proto(name, srcs, deps = [], grpc = False, visibility = None):
    """Generates <name>, a cc_library with the messages (and services if grpc) of srcs.

    srcs are paths relative to the workspace root as imports name them ("proto/x.proto").
    """
    pkg = native.package_name()
    stems = [s[:-len(".proto")] for s in srcs]
    outs = [s + ".pb.h" for s in stems] + [s + ".pb.cc" for s in stems]
    if grpc:
        outs += [s + ".grpc.pb.h" for s in stems] + [s + ".grpc.pb.cc" for s in stems]
    plugin = " --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin --grpc_out=$(GENDIR)" if grpc else ""
    native.genrule(
        name = name + "_gen",
        srcs = srcs + [d + "_srcs" for d in deps],
        outs = outs,
        cmd = "protoc -I. --cpp_out=$(GENDIR)" + plugin + " " +
              " ".join(["%s/%s" % (pkg, s) for s in srcs]),
    )
    native.filegroup(name = name + "_srcs", srcs = srcs, visibility = visibility)
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".cc")],
        hdrs = [o for o in outs if o.endswith(".h")],
        deps = deps + ["@system//:grpc++" if grpc else "@system//:protobuf"],
        # Linked even when no symbol is used: a .pb.cc registers its descriptors at start, and
        # server reflection can describe a service only if its file (referenced by nothing
        # else, e.g. producer.pb.cc) made it into the binary.
        alwayslink = True,
        visibility = visibility,
    )
