#!/bin/sh
echo "kiln: coverage reports need the online configuration (bazel/offline.bazelrc)" >&2
exit 1
