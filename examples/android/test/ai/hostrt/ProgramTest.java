package ai.hostrt;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Arrays;

/** The binding on the host's JDK: `java -Djava.library.path=DIR -cp CLASSES ai.hostrt.ProgramTest
 *  calls.bef digits.bef model.tflite input.npy golden.npy`. Prints the digits classes as `hostrt
 *  run` prints them; exits 1 on the first failed check. The TensorFlow Lite model takes and
 *  returns float32 (.npy files of little-endian f32, version 1 headers). */
public final class ProgramTest {
  private static void check(boolean ok, String what) {
    if (!ok) {
      System.err.println("FAILED: " + what);
      System.exit(1);
    }
  }

  /** The float32 values of a version-1 `.npy` file: the data follows a 10-byte preamble and
   *  the header whose length is in bytes 8 and 9. */
  private static float[] npyFloats(String path) throws Exception {
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(Paths.get(path))).order(ByteOrder.LITTLE_ENDIAN);
    b.position(10 + (b.getShort(8) & 0xffff));
    float[] v = new float[b.remaining() / 4];
    b.asFloatBuffer().get(v);
    return v;
  }

  public static void main(String[] args) throws Exception {
    try (Program calls = Program.load(Files.readAllBytes(Paths.get(args[0])), 1 << 20, 0)) {
      check(Arrays.asList(calls.functions()).contains("divmod"), "functions()");
      Object[] r = calls.call("divmod", 17, 5);
      check(r.length == 2 && (Integer) r[0] == 3 && (Integer) r[1] == 2, "divmod(17, 5)");
      try (Tensor x = Tensor.ofFloats(new float[] {1.5f, -2f, 4f}, 3)) {
        Object[] same = calls.call("same", x);
        try (Tensor y = (Tensor) same[0]) {
          check(Arrays.equals(y.toFloats(), new float[] {1.5f, -2f, 4f}), "tensor round trip");
          check(Arrays.equals(y.dims(), new long[] {3}) && y.dtype() == 1, "dims and dtype");
        }
      }
      // Errors are exceptions with a code and the kernel's location.
      try {
        calls.call("divmod", 1, 0);
        check(false, "division by zero throws");
      } catch (HostrtException e) {
        check(e.getMessage().contains("Divide by zero") && e.getMessage().contains("calls.mlir:"), e.getMessage());
      }
      try {
        calls.call("divmod", 1);
        check(false, "a wrong argument count throws");
      } catch (HostrtException e) {
        check(e.code == 3, "INVALID_ARGUMENT for a wrong count: " + e.code);
      }
      try {
        calls.call("divmod", 1.0f, 2);
        check(false, "a wrong argument type throws");
      } catch (HostrtException e) {
        check(e.code == 3 && e.getMessage().contains("has type f32"), e.getMessage());
      }
    }
    try {
      Program.load(new byte[] {1, 2, 3}, 0, 0);
      check(false, "a corrupt program throws");
    } catch (HostrtException e) {
      check(e.code == 15, "DATA_LOSS for a corrupt program: " + e.code);
    }
    // A TensorFlow Lite model imported from its bytes: the golden within 1e-5 of its largest value.
    float[] x = npyFloats(args[3]);
    float[] golden = npyFloats(args[4]);
    try (Program model = Program.fromTflite(Files.readAllBytes(Paths.get(args[2])), 0, 0);
        Tensor input = Tensor.ofFloats(x, 1, x.length);
        Tensor output = (Tensor) model.call("main", input)[0]) {
      float[] y = output.toFloats();
      float scale = 0;
      for (float g : golden) scale = Math.max(scale, Math.abs(g));
      check(y.length == golden.length, "model output size " + y.length);
      for (int i = 0; i < y.length; i++) check(Math.abs(y[i] - golden[i]) <= 1e-5f * scale, "model output " + i);
    }
    // An ONNX model (NCHW images) imported from its bytes: onnxruntime's output within 1e-5.
    float[] ox = npyFloats(args[6]);
    float[] ogolden = npyFloats(args[7]);
    try (Program cnn = Program.fromOnnx(Files.readAllBytes(Paths.get(args[5])), 0, 0);
        Tensor input = Tensor.ofFloats(ox, 1, 3, 16, 16);
        Tensor output = (Tensor) cnn.call("main", input)[0]) {
      float[] y = output.toFloats();
      check(y.length == ogolden.length, "ONNX model output size " + y.length);
      for (int i = 0; i < y.length; i++) check(Math.abs(y[i] - ogolden[i]) <= 1e-5f, "ONNX model output " + i);
    }
    try {
      Program.fromTflite(new byte[] {1, 2, 3}, 0, 0);
      check(false, "a malformed model throws");
    } catch (HostrtException e) {
      check(e.code == 3 && e.getMessage().contains("cannot import the model"), e.getMessage());
    }
    // The digits model with an input made in Java (its own test images, copied), the
    // classification traced.
    try (Program digits = Program.load(Files.readAllBytes(Paths.get(args[1])), 4 << 20, 2)) {
      float[] pixels;
      long[] dims;
      try (Tensor images = (Tensor) digits.call("test_images")[0]) {
        pixels = images.toFloats();
        dims = images.dims();
      }
      try {
        digits.traceEnd();
        check(false, "ending a trace never begun throws");
      } catch (HostrtException e) {
        check(e.code == 9, "FAILED_PRECONDITION without a trace: " + e.code);
      }
      digits.traceBegin();
      try {
        digits.traceBegin();
        check(false, "a second trace throws");
      } catch (HostrtException e) {
        check(e.code == 9, "FAILED_PRECONDITION for a second trace: " + e.code);
      }
      try (Tensor input = Tensor.ofFloats(pixels, dims);
          Tensor classes = (Tensor) digits.call("classify", input)[0]) {
        String trace = digits.traceEnd();
        check(trace.startsWith("{") && trace.contains("\"call @classify\"") && trace.contains("\"ph\":\"E\""),
            "a trace of the call: " + trace.substring(0, Math.min(200, trace.length())));
        if (args.length > 8) Files.write(Paths.get(args[8]), trace.getBytes("UTF-8"));
        int[] c = classes.toInts();
        StringBuilder line = new StringBuilder("DenseHostTensor dtype = i32, shape = [" + c.length + "], values = [");
        for (int i = 0; i < c.length; i++) line.append(i == 0 ? "" : ", ").append(c[i]);
        System.out.println(line.append("]"));
      }
    }
  }
}
