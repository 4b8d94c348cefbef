"""Presentation mode's step-by-step walk through one turn (for a teacher in front of a class): the
conversation, then the prompt message by message (each piece beside the template line that wrote it),
then the output region by region as it streamed, then the parsed message.

The walk is the page's own script (`walk.js`): every step is read from what the page already shows and
what provenance already put in it (the prompt's pieces and the response template's key sites,
`provenance_view`; the output's segments, `highlight`), so stepping costs no server round trip. This
module declares the bar it is driven from: ◀ and ▶ (or ← and →), the step's number and its caption.
The step is kept in the address (`?present=1&step=N`), so a share link made while presenting ("Link to
this step") opens the walk at that step."""

from __future__ import annotations

# The caption is read out as it changes (aria-live), so a screen reader follows the walk too. The bar
# also holds what the page's header holds in presentation mode (the header is left out, for the room):
# a link to this step (the Share link, with the step in it) and the way out.
WALK_BAR = (
    '<div class="walk-bar" role="group" aria-label="Walk through one turn">'
    '<button type="button" class="walk-button" data-walk="-1" aria-label="Previous step" title="Previous step (←)">◀</button>'
    '<button type="button" class="walk-button" data-walk="1" aria-label="Next step" title="Next step (→)">▶</button>'
    '<span class="walk-count"></span>'
    '<div class="walk-caption" aria-live="polite">→ walks through one turn: the conversation, the prompt message by '
    "message, the output region by region, the parsed message.</div>"
    '<button type="button" class="walk-button walk-link" title="A share link that opens presentation mode at this step">'
    "Link to this step</button>"
    '<button type="button" class="walk-button" data-present-toggle title="Leave presentation mode">▣ Leave</button></div>'
)
