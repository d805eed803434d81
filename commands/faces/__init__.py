"""Parts of the :class:`~commands.memory.MemoryLog` facade, one concern each,
mixed into it: each part's methods delegate to a use case of :mod:`commands.app`.

- :mod:`.formation`: memory that forms itself (extraction, dedup of lessons);
- :mod:`.upkeep`: checkpoints and recovery, retention by count, ephemeral and idle sessions;
- :mod:`.maintain`: ``maintain()``, every due piece of upkeep at once;
- :mod:`.agents`: the agents of a scope, with their counts by kind.
"""

from .agents import AgentsFace
from .formation import FormationFace
from .maintain import MaintainFace
from .upkeep import UpkeepFace

__all__ = ["AgentsFace", "FormationFace", "MaintainFace", "UpkeepFace"]
