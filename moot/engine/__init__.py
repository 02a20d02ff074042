"""The engine: run folders, units, the unit context protocols ask models through, stage group chats."""
