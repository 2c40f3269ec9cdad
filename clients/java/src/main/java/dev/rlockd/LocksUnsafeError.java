package dev.rlockd;

import java.util.List;

/** Thrown by {@link RlockdServer#assertLocksSafe()}: the server saw lock safety violations. */
public class LocksUnsafeError extends AssertionError {
    private static final long serialVersionUID = 1L;
    private final List<String> violations;

    public LocksUnsafeError(List<String> violations) {
        super(message(violations));
        this.violations = List.copyOf(violations);
    }

    private static String message(List<String> violations) {
        StringBuilder b = new StringBuilder("rlockd saw ").append(violations.size())
                .append(" lock safety violation(s):");
        for (String v : violations) {
            b.append("\n  - ").append(v);
        }
        return b.toString();
    }

    /** What the server saw, one line each. */
    public List<String> violations() {
        return violations;
    }
}
