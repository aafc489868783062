package ai.hostrt;

/** A hostrt error: a status code (TensorFlow's numbers) and a message that ends with the
 *  failing kernel's location when there is one. */
public final class HostrtException extends RuntimeException {
  /** The code: 3 for a bad argument, 5 not found, 8 out of memory, 15 a corrupt program. */
  public final int code;

  public HostrtException(int code, String message) {
    super(message);
    this.code = code;
  }
}
