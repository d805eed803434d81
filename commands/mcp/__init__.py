"""memlog over MCP: a stdio server on the official SDK (``pip install 'memlog[mcp]'``).

``memlog mcp [--user U] [--agent A] [--read-only]`` runs :func:`serve`. See
``docs/integrations/mcp.md`` for the tools, the resources and the scope.
"""

from .scope import Guard, ServerScope
from .server import MemlogServer, build_server, serve
from .writes import WRITE_TOOLS

__all__ = ["WRITE_TOOLS", "Guard", "MemlogServer", "ServerScope", "build_server", "serve"]
