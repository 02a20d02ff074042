"""The scripted model (`scripted`, `scripted:SCRIPT`) for tests and demos: options, client, replies."""
