"""What keeps runs safe: atomic writes and environment errors, secrets redacted from output, stop signals."""
