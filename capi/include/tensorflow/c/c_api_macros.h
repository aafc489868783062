/* hostrt's implementation of TensorFlow's C API for ops and kernels: export macro.
 * Same names and signatures as TensorFlow's headers of the same path, so plugins written
 * against TensorFlow compile unchanged; see docs/capi.md for the contract. */
#ifndef TENSORFLOW_C_C_API_MACROS_H_
#define TENSORFLOW_C_C_API_MACROS_H_

#ifdef SWIG
#define TF_CAPI_EXPORT
#elif defined(_WIN32)
#ifdef TF_COMPILE_LIBRARY
#define TF_CAPI_EXPORT __declspec(dllexport)
#else
#define TF_CAPI_EXPORT __declspec(dllimport)
#endif
#else
#define TF_CAPI_EXPORT __attribute__((visibility("default")))
#endif

/* The version of this C ABI: bumped when a declared function, struct or enum value changes
 * incompatibly (docs/capi.md, "Versioning"); adding functions keeps it. */
#define HOSTRT_TF_C_ABI_VERSION 1

/* The byte offset just past MEMBER: TensorFlow's `struct_size` convention. */
#ifndef TF_OFFSET_OF_END
#define TF_OFFSET_OF_END(TYPE, MEMBER) (offsetof(TYPE, MEMBER) + sizeof(((TYPE*)0)->MEMBER))
#endif

#endif /* TENSORFLOW_C_C_API_MACROS_H_ */
