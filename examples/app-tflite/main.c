/* An image classifier in C: imports an int8 TensorFlow Lite model (a `.tflite` file) through
 * the C API, runs it on one image, and prints the class scores and the best class.
 *
 * From the repository root (examples/app-tflite/README.md; tools/tests/app_tflite.rs builds
 * it the same way):
 *
 *   cargo build -q -p hostrt-c
 *   cp target/debug/libhostrt_c.a target/debug/libhostrt.a
 *   mkdir -p target/examples/app-tflite
 *   cc -std=c11 -I capi/include examples/app-tflite/main.c target/debug/libhostrt.a \
 *      -lpthread -ldl -lm -o target/examples/app-tflite/classify
 *   target/examples/app-tflite/classify import/tests/models/mobilenet_v1_vww_i8.tflite \
 *      import/tests/models/mobilenet_v1_vww_i8.input.npy
 *
 * The image is a `.npy` file of int8 pixels already quantized as the model's input expects
 * (shape [1, height, width, channels]); a camera app would quantize its frame instead.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostrt/hostrt.h"

static int fail(const char* what, hostrt_status* status) {
  fprintf(stderr, "classify: %s: %s\n", what, hostrt_status_message(status));
  return 1;
}

/* Reads a whole file; NULL when it cannot. */
static unsigned char* read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char* data = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long size = ftell(f);
    if (size > 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)size)) != NULL &&
        fread(data, 1, (size_t)size, f) != (size_t)size) {
      free(data);
      data = NULL;
    }
    *len = size > 0 ? (size_t)size : 0;
  }
  fclose(f);
  return data;
}

/* The int8 data and shape of a version-1 `.npy` file (`'descr': '|i1'`, C order). */
static const int8_t* npy_int8(const unsigned char* npy, size_t len, int64_t dims[4], size_t* rank, size_t* n) {
  if (len < 10 || memcmp(npy, "\x93NUMPY\x01", 7) != 0) return NULL;
  size_t header = 10 + (size_t)(npy[8] | npy[9] << 8);
  if (header > len || !strstr((const char*)npy + 10, "'|i1'")) return NULL;
  const char* shape = strstr((const char*)npy + 10, "'shape': (");
  if (!shape) return NULL;
  shape += strlen("'shape': (");
  *rank = 0;
  *n = 1;
  while (*rank < 4 && *shape >= '0' && *shape <= '9') {
    dims[*rank] = strtoll(shape, (char**)&shape, 10);
    *n *= (size_t)dims[(*rank)++];
    while (*shape == ',' || *shape == ' ') shape++;
  }
  return *n == len - header ? (const int8_t*)(npy + header) : NULL;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODEL.tflite IMAGE.npy\n", argv[0]);
    return 2;
  }
  hostrt_status* s = hostrt_status_new();
  hostrt_host* host = hostrt_host_new(NULL, s);
  if (!host) return fail("host", s);
  /* The model is imported once, here: its layers become kernels, its activations one arena. */
  hostrt_program* model = hostrt_program_from_tflite_file(host, argv[1], s);
  if (!model) return fail(argv[1], s);

  size_t len = 0, rank = 0, n = 0;
  int64_t dims[4];
  unsigned char* npy = read_file(argv[2], &len);
  const int8_t* pixels = npy ? npy_int8(npy, len, dims, &rank, &n) : NULL;
  if (!pixels) {
    fprintf(stderr, "classify: %s: not an int8 .npy image\n", argv[2]);
    return 1;
  }
  hostrt_tensor* image = hostrt_tensor_new(host, HOSTRT_DTYPE_I8, dims, rank, pixels, n, s);
  free(npy);
  if (!image) return fail("image", s);

  hostrt_value arg = {.type_ = HOSTRT_TYPE_TENSOR, .tensor = image};
  hostrt_results* results = NULL;
  hostrt_value scores;
  if (hostrt_call(model, "main", &arg, 1, &results, s) != HOSTRT_OK ||
      hostrt_results_get(results, 0, &scores, s) != HOSTRT_OK)
    return fail("main", s);
  size_t classes = hostrt_tensor_byte_size(scores.tensor);
  const int8_t* score = hostrt_tensor_data(scores.tensor);
  size_t best = 0;
  printf("scores:");
  for (size_t i = 0; i < classes; i++) {
    printf(" %d", score[i]);
    if (score[i] > score[best]) best = i;
  }
  printf("\nclass: %zu\n", best);

  hostrt_tensor_destroy(scores.tensor, s);
  hostrt_results_destroy(results, s);
  hostrt_tensor_destroy(image, s);
  hostrt_program_destroy(model, s);
  if (hostrt_host_destroy(host, s) != HOSTRT_OK) return fail("host", s);
  hostrt_status_destroy(s);
  return 0;
}
