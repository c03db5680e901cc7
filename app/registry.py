"""The app's pages, in menu order. Adding a page is one line here plus its file in app/views/.

The folder is not called `pages/`: a `pages/` folder next to the entry script switches Streamlit (and AppTest)
into the legacy multipage mode, where a rerun executes the page file without the entry script."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageSpec:
    file: str  # relative to app/
    title: str
    url_path: str
    # No icons: Streamlit makes the current page's icon the favicon, and fetches Material icons (and emoji
    # favicons) from a CDN for that. The app must not touch the network.


PAGES: list[PageSpec] = [
    PageSpec("views/tokens.py", "Tokens", "tokens"),
    PageSpec("views/embeddings.py", "Embeddings", "embeddings"),
    PageSpec("views/attention.py", "Attention", "attention"),
    PageSpec("views/masked_words.py", "Masked words", "masked"),
    PageSpec("views/word_senses.py", "Word senses", "senses"),
    PageSpec("views/sentence_vector.py", "Sentence vector & NSP", "sentence"),
    PageSpec("views/pretraining.py", "Pre-training", "pretraining"),
    PageSpec("views/inside.py", "Inside the model", "inside"),
    PageSpec("views/task.py", "Task", "task"),
    PageSpec("views/compare.py", "Compare models", "compare"),
]
