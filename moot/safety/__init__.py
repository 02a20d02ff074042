"""What keeps runs safe: atomic writes and environment errors, secrets redacted from output, stop signals,
and text others wrote neutralised for where it is shown (neutral)."""
