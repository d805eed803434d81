"""Parts of the :class:`~commands.memory.MemoryLog` facade, one concern each,
mixed into it: each part's methods delegate to a use case of :mod:`commands.app`.

- :mod:`.formation`: memory that forms itself (extraction, dedup of lessons);
- :mod:`.upkeep`: checkpoints and recovery, and ``maintain()``, every due piece of upkeep at once;
- :mod:`.agents`: the agents of a scope, with their counts by kind.
"""

from .agents import AgentsFace
from .formation import FormationFace
from .upkeep import MaintainFace, UpkeepFace

__all__ = ["AgentsFace", "FormationFace", "MaintainFace", "UpkeepFace"]
