/* kiln's version: the one place it is written. CMake's project() reads it from here (the
 * installed package's version), `kiln --version` prints it, and Bazel builds see this header. */
#ifndef KILN_VERSION_H_
#define KILN_VERSION_H_

#define KILN_VERSION "0.1.0"

#endif /* KILN_VERSION_H_ */
