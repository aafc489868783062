package ai.hostrt;

/** A hostrt program (BEF, from `hostrt compile`) loaded with a host of its own: an arena of
 *  `arenaBytes` (0: the system heap) and `workers` threads (0: calls run on the caller's
 *  thread). Close it when done. */
public final class Program implements AutoCloseable {
  static {
    System.loadLibrary("hostrt");
  }

  private long handle;

  private Program(long handle) {
    this.handle = handle;
  }

  /** Loads a copy of `bef`. Throws HostrtException for a corrupt program or an unknown kernel. */
  public static Program load(byte[] bef, long arenaBytes, int workers) {
    return new Program(nativeLoad(bef, arenaBytes, workers));
  }

  /** Imports the TensorFlow Lite model `model` (a `.tflite` file's bytes) into a program whose
   *  `main` takes the model's inputs and returns its outputs. Throws HostrtException naming the
   *  operator or tensor of a malformed or unsupported model. */
  public static Program fromTflite(byte[] model, long arenaBytes, int workers) {
    return new Program(nativeFromTflite(model, arenaBytes, workers));
  }

  /** Imports the ONNX model `model` (a `.onnx` file's bytes, weights inside it) into a program
   *  whose `main` takes the model's inputs and returns its outputs. Throws HostrtException
   *  naming the node of a malformed or unsupported model. */
  public static Program fromOnnx(byte[] model, long arenaBytes, int workers) {
    return new Program(nativeFromOnnx(model, arenaBytes, workers));
  }

  /** The names of the program's functions. */
  public String[] functions() {
    return nativeFunctions(handle);
  }

  /** Calls `function` with arguments of its types (Integer, Long, Float, Double, Boolean,
   *  Tensor) and returns its results, boxed the same way (a chain is null). A result that
   *  failed throws its error, with the failing kernel's location. */
  public Object[] call(String function, Object... args) {
    return nativeCall(handle, function, args);
  }

  /** Starts tracing this program's host: every kernel, call and task until traceEnd(), as the
   *  C API's hostrt_trace_begin does. Throws HostrtException (code 9, FAILED_PRECONDITION)
   *  while a trace runs. */
  public void traceBegin() {
    nativeTraceBegin(handle);
  }

  /** Ends the trace and returns it as JSON in Chrome's trace event format, which
   *  ui.perfetto.dev opens. Throws HostrtException (code 9) when no trace was begun. */
  public String traceEnd() {
    return nativeTraceEnd(handle);
  }

  @Override
  public void close() {
    if (handle != 0) {
      nativeClose(handle);
      handle = 0;
    }
  }

  private static native long nativeLoad(byte[] bef, long arenaBytes, int workers);
  private static native long nativeFromTflite(byte[] model, long arenaBytes, int workers);
  private static native long nativeFromOnnx(byte[] model, long arenaBytes, int workers);
  private static native String[] nativeFunctions(long handle);
  private static native Object[] nativeCall(long handle, String function, Object[] args);
  private static native void nativeTraceBegin(long handle);
  private static native String nativeTraceEnd(long handle);
  private static native void nativeClose(long handle);
}
