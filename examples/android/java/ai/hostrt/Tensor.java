package ai.hostrt;

/** A dense tensor in native memory, shared (not copied) with the programs it is passed to.
 *  Close it when done; a closed tensor's methods throw. */
public final class Tensor implements AutoCloseable {
  static {
    System.loadLibrary("hostrt");
  }

  /** The native handle (read by the native call to pass the tensor). */
  private long handle;

  /** A tensor owning `handle` (made by native code for results). */
  Tensor(long handle) {
    this.handle = handle;
  }

  /** A float32 tensor holding a copy of `data`, of shape `dims`. */
  public static Tensor ofFloats(float[] data, long... dims) {
    return new Tensor(nativeFromFloats(data, dims));
  }

  /** An int32 tensor holding a copy of `data`, of shape `dims`. */
  public static Tensor ofInts(int[] data, long... dims) {
    return new Tensor(nativeFromInts(data, dims));
  }

  /** The dtype (TensorFlow's numbers: 1 float32, 3 int32, ...). */
  public int dtype() {
    return nativeDtype(handle);
  }

  /** The shape. */
  public long[] dims() {
    return nativeDims(handle);
  }

  /** A copy of the elements of a float32 tensor. */
  public float[] toFloats() {
    return nativeFloats(handle);
  }

  /** A copy of the elements of an int32 tensor. */
  public int[] toInts() {
    return nativeInts(handle);
  }

  @Override
  public void close() {
    if (handle != 0) {
      nativeClose(handle);
      handle = 0;
    }
  }

  private static native long nativeFromFloats(float[] data, long[] dims);
  private static native long nativeFromInts(int[] data, long[] dims);
  private static native int nativeDtype(long handle);
  private static native long[] nativeDims(long handle);
  private static native float[] nativeFloats(long handle);
  private static native int[] nativeInts(long handle);
  private static native void nativeClose(long handle);
}
