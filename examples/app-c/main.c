/* The nearest runnable proxy for a phone app: a C program linked with the static library
 * libhostrt.a that loads the digits model (digits.mlir, compiled to BEF), hands it an input
 * tensor that lives in the app's own memory, and prints the predicted classes in the form
 * `hostrt run digits.mlir` prints them. From the repository root (examples/app-c/README.md):
 *
 *   cargo build -q -p hostrt -p hostrt-c
 *   cp target/debug/libhostrt_c.a target/debug/libhostrt.a
 *   mkdir -p target/examples/app-c
 *   target/debug/hostrt compile examples/app-c/digits.mlir -o target/examples/app-c/digits.bef
 *   cc -std=c11 -I capi/include examples/app-c/main.c target/debug/libhostrt.a \
 *      -lpthread -ldl -lm -o target/examples/app-c/app
 *   target/examples/app-c/app target/examples/app-c/digits.bef
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostrt/hostrt.h"

static int fail(const char* what, hostrt_status* status) {
  fprintf(stderr, "app: %s: %s\n", what, hostrt_status_message(status));
  return 1;
}

/* Frees the app's input buffer once hostrt no longer uses it. */
static void release_pixels(void* data, size_t len, void* arg) {
  (void)len;
  (void)arg;
  free(data);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.bef\n", argv[0]);
    return 2;
  }
  hostrt_status* s = hostrt_status_new();
  hostrt_host_options options;
  hostrt_host_options_init(&options);
  options.arena_bytes = 4 << 20; /* every tensor of a call comes from this arena */
  hostrt_host* host = hostrt_host_new(&options, s);
  if (!host) return fail("host", s);
  hostrt_program* model = hostrt_program_load_file(host, argv[1], s);
  if (!model) return fail(argv[1], s);

  /* The input: the program's test images, copied into memory the app owns (as a camera
   * frame would be) and handed over without a copy. */
  hostrt_results* results = NULL;
  hostrt_value images;
  if (hostrt_call(model, "test_images", NULL, 0, &results, s) != HOSTRT_OK ||
      hostrt_results_get(results, 0, &images, s) != HOSTRT_OK)
    return fail("test_images", s);
  size_t bytes = hostrt_tensor_byte_size(images.tensor);
  int64_t dims[2] = {hostrt_tensor_dims(images.tensor)[0], hostrt_tensor_dims(images.tensor)[1]};
  float* pixels = aligned_alloc(64, (bytes + 63) / 64 * 64);
  memcpy(pixels, hostrt_tensor_data(images.tensor), bytes);
  hostrt_tensor_destroy(images.tensor, s);
  hostrt_results_destroy(results, s);
  hostrt_tensor* input = hostrt_tensor_borrow(host, HOSTRT_DTYPE_F32, dims, 2, pixels, bytes, release_pixels, NULL, s);
  if (!input) return fail("input", s);

  hostrt_value arg = {.type_ = HOSTRT_TYPE_TENSOR, .tensor = input};
  hostrt_value classes;
  if (hostrt_call(model, "classify", &arg, 1, &results, s) != HOSTRT_OK ||
      hostrt_results_get(results, 0, &classes, s) != HOSTRT_OK)
    return fail("classify", s);
  size_t n = (size_t)hostrt_tensor_dims(classes.tensor)[0];
  const int32_t* c = hostrt_tensor_data(classes.tensor);
  printf("DenseHostTensor dtype = i32, shape = [%zu], values = [", n);
  for (size_t i = 0; i < n; i++) printf(i ? ", %d" : "%d", c[i]);
  printf("]\n");

  hostrt_tensor_destroy(classes.tensor, s);
  hostrt_results_destroy(results, s);
  hostrt_tensor_destroy(input, s);
  hostrt_allocator_stats stats;
  hostrt_host_allocator_stats(host, &stats, s);
  hostrt_program_destroy(model, s);
  if (hostrt_host_destroy(host, s) != HOSTRT_OK) return fail("host", s);
  hostrt_status_destroy(s);
  fprintf(stderr, "app: arena peak %zu of %zu bytes\n", stats.peak, stats.capacity);
  return 0;
}
