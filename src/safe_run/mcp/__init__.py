"""The MCP server: the tools (`server`) over stdio, and over Streamable HTTP (`http`)."""
