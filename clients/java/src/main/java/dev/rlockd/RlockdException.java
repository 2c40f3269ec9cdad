package dev.rlockd;

/** The server could not be started (missing binary, port taken, early exit) or answered an error. */
public class RlockdException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final String logs;

    public RlockdException(String message) {
        this(message, null, null);
    }

    public RlockdException(String message, String logs, Throwable cause) {
        super(logs == null ? message : message + "\n--- rlockd log ---\n" + (logs.isBlank() ? "(no output)" : logs), cause);
        this.logs = logs;
    }

    /** The server's log when it had been run, else null. */
    public String logs() {
        return logs;
    }
}
