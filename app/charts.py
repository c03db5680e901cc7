"""Pure plotly figure builders: numpy/pandas in, `go.Figure` out. No Streamlit here, so tests call them directly;
the numbers they draw are worked out in `app.transforms`.

User text reaches figures only through `label()`, which escapes what plotly would otherwise read as markup
(plotly renders a few HTML tags and `$…$` LaTeX in text; escaped, they show as typed).
Dimensions: S = tokens, H = hidden size, L = layers, N = heads, T = thumbnail side.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
import unicodedata
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go

from app import transforms
from bert_core.pieces import draws_nothing

if TYPE_CHECKING:  # only a type here
    from bert_core.pieces import PieceStyle

TOKEN_COLORS = {
    "special": "#7b61ff",  # [CLS], [SEP], [PAD], [MASK]
    "unk": "#e4572e",  # the vocabulary's unknown token
    "continuation": "#f2a541",  # a piece that continues the word before it
    "word": "#4c9be8",  # a word or a word's first piece
}
# Colours that stay apart for red-green colour blindness and show on both themes' pages: five of Okabe and Ito's
# set, then Paul Tol's, picked so that every pair of the eight differs by CIE76 > 15 to normal, deuteranope and
# protanope eyes alike (a test holds them to it). The earlier red and green (#e15759, #59a14f) sat side by side
# and read as one colour to a deuteranope (0.9): heads 2 and 3, or Embeddings' |position| and |summed|. Okabe
# and Ito's black, and Tol's darkest, vanish on the dark theme; a grey read as the pink beside it.
SEQUENCE_COLORS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#33BBEE", "#AA3377", "#117733"]
HEAD_COLORS = [  # twelve, bert-base's heads per layer: neighbours > 20 apart; no twelve keep every pair so
    *SEQUENCE_COLORS, "#999933", "#EE6677", "#CC3311", "#EE8866",
]  # fmt: skip
BASE_FONT = 13
# The model view's role labels, on a light band: darker than TOKEN_COLORS' red, to be read at 10 px (#e4572e on
# the band was 3.7:1, under WCAG's 4.5:1 for text)
ACCENT_TEXT = "#b23a1a"
PROJECTOR_WIDTH = 560  # px a page's main area leaves a chart on a 1024 px projector with the sidebar open


def page_px(font_size: int) -> int:
    """About how wide a chart across the page is drawn, for the builders' label thinning: ~900 px, or in
    larger text (a projector) a 1024 px screen's page with the sidebar open (ui.chart_width, which a builder
    cannot call, answers the same from the session)."""
    return 900 if font_size <= BASE_FONT else PROJECTOR_WIDTH


GROUPED_BARS_LIMIT = 64  # categories drawn as bars, each labelled; more become lines


def _hex_rgb(color: str) -> tuple[int, int, int]:
    """(r, g, b) of "#rrggbb", or of "rgb(r, g, b)" as plotly's named colour scales write their colours."""
    if color.startswith("rgb"):
        return tuple(int(float(v)) for v in color[color.index("(") + 1 : color.index(")")].split(",")[:3])  # type: ignore[return-value]
    return tuple(int(color[k : k + 2], 16) for k in (1, 3, 5))  # type: ignore[return-value]


def _luminance(color: str) -> float:
    """WCAG's relative luminance of a "#rrggbb" colour."""
    lin = [c / 255 / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in _hex_rgb(color)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def ink(background: str) -> str:
    """Black or white text, whichever contrasts more with `background`: white on the chips' orange was 2:1."""
    lum = _luminance(background)
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def label(text: str) -> str:
    """Text as plotly should draw it: HTML-escaped, `$` made an entity so it never triggers LaTeX, and a mark
    that begins a piece shown on its own (`_lone_marks`)."""
    return html.escape(_lone_marks(str(text)), quote=False).replace("$", "&#36;")


def _lone_marks(text: str) -> str:
    """A mark that belongs on the character before it, where a piece begins with one ("##็", a Thai vowel sign
    cut from its consonant; "##🏽", a skin tone cut from its emoji), drawn on the "#" or space before it: the
    font had no such pair and drew a box, or "#" and U+FE0F made the emoji "#️". Set on a dotted circle, as
    Unicode's charts show a lone mark; a selector or joiner, which draws nothing, as its code point."""
    if not any(_joins_before(c) for c in text):
        return text
    out, before = [], None
    for c in text:
        if _joins_before(c) and (before is None or before in "#▁␣ :"):
            out.append(f"\\u{ord(c):04x}" if draws_nothing(c) else "\u25cc" + c)
        else:
            out.append(c)
        before = c
    return "".join(out)


def labels(texts: Sequence[str]) -> list[str]:
    return [label(t) for t in texts]


def _layout(fig: go.Figure, title: str | None, height: int, font_size: int) -> go.Figure:
    # Every text size is set explicitly: Streamlit's plotly theme sets tick, axis-title, legend and title
    # sizes of its own, which win over layout.font, so large text would otherwise leave the token labels small.
    title_size = font_size + 3
    text = None if title is None else label(title)
    lines = 1
    if text is not None and font_size > BASE_FONT:
        # Plotly never wraps a title; in large text a long one ran off a projector's page. Wrapped at spaces
        # (escaped markup has none inside it) to what the page holds at ~0.55 text heights a character.
        # A short last word stays with the one before it: "…vectors, layer" over a lone "3" read as two titles.
        glued = re.sub(r" (\S{1,3})$", "\u00a0\\1", text)
        wrapped = textwrap.wrap(glued, width=max(20, int(PROJECTOR_WIDTH / (0.55 * title_size))))
        text, lines = "<br>".join(wrapped), max(1, len(wrapped))
    legend = fig.layout.legend
    # A horizontal legend above the plot sits in the top margin, as does the title: the margin holds both,
    # the title at the top and the legend below it, so neither covers the other.
    top_legend = (
        legend.orientation == "h" and (legend.y or 0) > 1 and any(t.showlegend is not False for t in fig.data)
    )
    title_px = round(title_size * (0.6 + 1.2 * lines)) if title else 0
    legend_px = 0
    if top_legend:
        # Rows the legend wraps into on the narrowest page the app is laid out for, a 1024 px screen with the
        # sidebar open, in either text size: the legend wraps where the browser draws it, which the server
        # cannot see, and reckoned for 900 px Embeddings' six entries ran into the title at 1024 px. On a
        # wider screen that leaves a gap of the rows it does not need. Each entry is its name plus a swatch and
        # a gap (~40 px). Once a legend wraps, plotly sets its entries in columns as wide as the widest entry:
        # Embeddings' five norms took three rows in Large text where their summed widths made two, and the
        # third ran into the title.
        names = list(dict.fromkeys(t.name or "" for t in fig.data if t.showlegend is not False and t.name))
        entries = [len(html.unescape(n)) * 0.6 * font_size + 40 for n in names]
        room = PROJECTOR_WIDTH - 100  # the legend is laid out in the plot's width: the page's less its axis
        rows = 1
        if sum(entries) > room:
            rows = math.ceil(len(entries) / max(1, int(room // max(entries))))
        legend_px = round(font_size * 2) * rows
    top = 10 + title_px + legend_px
    fig.update_layout(
        title=None
        if title is None
        else {
            "text": text,
            "font": {"size": title_size},
            # Anchored on the plot area and growing upwards, so a two-line title stays whole above the legend.
            "y": 1.0,
            "yref": "paper",
            "yanchor": "bottom",
            # plotly anchors a multi-line title by its first line: lift it by the lines below it.
            "pad": {"b": legend_px + 6 + round((lines - 1) * title_size * 1.5)},
        },
        height=height + (top - (40 if title else 10)),
        margin={"l": 10, "r": 10, "t": top, "b": 10},
        font={"size": font_size},
        legend={"font": {"size": font_size}},
        hoverlabel={"font": {"size": font_size}},
    )
    fig.update_xaxes(tickfont={"size": font_size}, title_font={"size": font_size})
    fig.update_yaxes(tickfont={"size": font_size}, title_font={"size": font_size})
    return fig


# -- tokens ---------------------------------------------------------------------------------------------


def token_kind(
    token: str,
    special: bool,
    style: PieceStyle,
    *,
    continues: bool | None = None,
    specials: Collection[str] = (),
) -> str:
    """The chip colour of a piece: "unk", "special", "continuation" (of the word before it) or "word".

    `continues`: whether the piece carries on the word before it, where the caller knows the words (a BPE
    text's first word has no space marker, yet starts a word); else the piece's own marker decides.
    `specials`: the tokenizer's special tokens, so one typed into the text (RoBERTa's <mask>) is one too."""
    if token == style.unk_token:
        return "unk"
    if special or token in specials or (token.startswith("[") and token.endswith("]")):
        return "special"
    if style.is_continuation(token) if continues is None else continues:
        return "continuation"
    return "word"


def token_chips(
    tokens: Sequence[str],
    kinds: Sequence[str],
    hovers: Sequence[str] | None = None,
    *,
    style: PieceStyle,
    row_width: float = 60.0,
    font_size: int = BASE_FONT,
) -> go.Figure:
    """Pieces as coloured chips wrapped into rows, one horizontal bar per piece; `kinds` from `token_kind`,
    named in the legend in `style`'s terms.

    Chips are bars (not HTML), so a token can never become markup. One trace per kind gives a legend.
    """
    widths = [max(len(t), 1) + 2.0 for t in tokens]
    starts, rows = [], []
    x = 0.0
    row = 0
    for w in widths:
        if x > 0 and x + w > row_width:
            row += 1
            x = 0.0
        starts.append(x)
        rows.append(row)
        x += w + 0.6
    marker = style.continuation_prefix
    names = {
        "word": "word / first piece",
        "continuation": f"{marker} continuation" if marker else "continuation",
        "special": "special",
        "unk": style.unk_token,
    }
    fig = go.Figure()
    for kind in ("word", "continuation", "special", "unk"):
        idx = [i for i, k in enumerate(kinds) if k == kind]
        if not idx:
            continue
        fig.add_trace(
            go.Bar(
                name=label(names[kind]),  # a vocabulary's unknown token may look like markup ("<unk>")
                orientation="h",
                base=[starts[i] for i in idx],
                x=[widths[i] for i in idx],
                y=[rows[i] for i in idx],
                text=[label(style.display(tokens[i])) for i in idx],
                customdata=np.array(idx),
                hovertext=None if hovers is None else [label(hovers[i]) for i in idx],
                hoverinfo="text" if hovers is not None else "none",
                textposition="inside",
                insidetextanchor="middle",
                textangle=0,
                textfont={"size": font_size, "color": ink(TOKEN_COLORS[kind]), "family": "monospace"},
                marker={"color": TOKEN_COLORS[kind], "line": {"width": 0}},
                width=0.8,
            )
        )
    n_rows = (rows[-1] + 1) if rows else 1
    fig.update_layout(
        barmode="overlay",
        uniformtext={"minsize": max(8, font_size - 4), "mode": "show"},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        xaxis={"visible": False, "range": [-0.5, row_width + 0.5], "fixedrange": True},
        # An explicit range: plotly's autorange pads horizontal bars with an empty band that grows with the
        # number of rows (about 400 px at 512 pieces).
        yaxis={"visible": False, "range": [n_rows - 0.5, -0.5], "fixedrange": True},
        bargap=0.1,
    )
    return _layout(fig, None, 60 + 34 * n_rows * font_size // BASE_FONT, font_size)


# -- matrices -------------------------------------------------------------------------------------------


def _text_px(texts: Sequence[str], font_size: int) -> float:
    """About how wide the longest of `texts` is drawn, in pixels (an average glyph is ~0.6 em); a label's
    escapes (`label`: "&lt;/s&gt;") count as the characters they draw."""
    return 0.6 * font_size * max((len(html.unescape(t)) for t in texts), default=0)


def _numbered(k: int, name: str) -> str:
    """A row or column label with its position, once: pages that number their labels ('3: bank',
    ui.token_labels) are not numbered again."""
    return name if name.startswith(f"{k}: ") else f"{k}: {name}"


def heatmap(
    matrix: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    title: str | None = None,
    zmin: float | None = None,
    zmax: float | None = None,
    zmid: float | None = None,
    colorscale: str | list = "Blues",
    value_name: str = "value",
    font_size: int = BASE_FONT,
    height: int | None = None,
    width_px: int | None = None,
    numbered: bool = False,
    separator: str = " · ",
    positions: tuple[Sequence[int], Sequence[int]] | None = None,
    unit: str | None = None,
    cell_numbers: int | None = None,
) -> go.Figure:
    """A labelled (R, C) heatmap. Its axes are categories named by each row's and column's numbered label
    ("3: the"), so repeated tokens stay separate rows and the hover reads a cell's names off the axes.
    `numbered`: the labels already say where they are (a list page's "1. text"), so no position is added to
    them; labels numbered as ui.token_labels does ("3: bank") are recognised without it.
    `width_px`: about how wide the chart is drawn (a half-width column: ~400), so column labels are thinned to
    as many as fit. `zmid`: the value a diverging scale puts at its middle colour (0 for signed values, so
    white means none and not the data's midpoint).

    `separator` stands between a cell's row and column in the hover: " → " where the row attends to the column (or draws
    from it, as rollout does); the default " · " elsewhere, where a cosine or a layer × head grid has no
    direction ("layer 3 → head 2" read as something flowing). `positions`: the rows' and columns' own numbers,
    written before their names in the hover and on a thinned axis, where a view shows some of a text's tokens
    (0, 1, ... by default: a view without [CLS] then called the first word 0, which the CSV and every other page
    call 1). `unit`: written over the colour bar, where its numbers are not a probability or a cosine the title
    already names (a drop in nats read as a bare "0.8" off the bar). `cell_numbers`: a font size to write each
    cell's value at (two decimals) where a cell is wide enough for it; `cells_written(fig)` says whether it was
    (12 sentences' cosines at 1280 px ran into each other, "1.001.000.97", or shrank to 5 px).
    """
    matrix = np.asarray(matrix, dtype=np.float32)
    r, c = matrix.shape
    # plotly keeps a bound only when both are given (zauto stays on otherwise): a lone zmin=0 was dropped and the
    # scale stretched over the data, so near-uniform weights of 0.089 to 0.093 drew as strong structure
    if (zmin is None) != (zmax is None) and np.isfinite(matrix).any():
        low, high = float(np.nanmin(matrix)), float(np.nanmax(matrix))
        if zmin is None:
            zmin = low if low < zmax else zmax - 1.0  # a map that is all its bound (every weight 0) too
        else:
            zmax = high if high > zmin else zmin + 1.0
    rl, cl = labels(row_labels), labels(col_labels)
    row_at, col_at = positions or (range(r), range(c))
    width_px = width_px or page_px(font_size)
    # Plain positions (a vector's dimensions "0".."767", each at its own place) stay a numeric axis, whose
    # number is their name and whose ticks plotly spaces evenly ("0, 200, 400"; as categories: every 36th,
    # turned on end). Tokens that read "0 1 2" at places 1, 2, 3 are not plain: they are numbered.
    plain_r, plain_c = (
        all(name == str(k) == str(place) for k, (name, place) in enumerate(zip(names, at, strict=True)))
        for names, at in ((rl, row_at), (cl, col_at))
    )
    # Every other axis is categories named with each label's position, so two rows of the same token ("the",
    # "the") are two categories and read apart, and the hover names a cell from its axes: a label per cell
    # was R*C strings, and a 512-token map's 262,144 of them made one figure 6.8 MB to receive and parse.
    rn = rl if numbered or plain_r else [_numbered(i, name) for i, name in zip(row_at, rl, strict=True)]
    cn = cl if numbered or plain_c else [_numbered(j, name) for j, name in zip(col_at, cl, strict=True)]
    if len(set(rn)) < r or len(set(cn)) < c:
        raise ValueError("a heatmap's numbered row and column labels must each be unique (one category each)")
    trace = go.Heatmap(
        z=matrix,
        x=np.arange(c) if plain_c else cn,
        y=np.arange(r) if plain_r else rn,
        zmin=zmin,
        zmax=zmax,
        zmid=zmid,
        colorscale=colorscale,
        colorbar={"thickness": 12} | ({"title": {"text": unit, "side": "top"}} if unit else {}),
        hovertemplate=f"%{{y}}{separator}%{{x}}<br>{value_name} %{{z:.4f}}<extra></extra>",
    )
    fig = go.Figure(trace)
    few_short = all(len(html.unescape(t)) <= 3 for t in cl)
    colour_bar_px = 12 + _text_px(["0.5", unit or ""], font_size)
    label_px = _text_px(cl, font_size) + 6  # an upright label's width and its gap

    def ticks(names: list[str], categories: list[str], every: int) -> list[str]:
        # Thinned labels carry their position: without it every n-th token reads like a sentence with gaps.
        return names if every == 1 else categories[::every]

    def lay_out(below: float) -> tuple[int, int, float, int, bool]:
        """(height, every_r, plot_px, every_c, upright) with `below` px of column labels under the plot."""
        h = (
            height
            if height is not None
            else int(max(300, 60 + below + min(780, 18 * r * font_size / BASE_FONT)))
        )
        # (the rows' part capped, a 512-token map in 780 px, not the labels' room below them)
        # As many labels as fit without running together, fewer as large text grows: rows in the plot's height,
        # columns in its width, which the row labels and the colour bar (12 px and its values) leave of the
        # chart's: in Large text a half-width chart's row labels ("12: deposited") took half of it, and its
        # column labels piled up. Labels tilted by 60° stand 1/sin(60°) = 1.15 text heights apart at the least;
        # short ones (sentence numbers "1".."12") stand upright, side by side, where they fit (tilted, they only
        # looked odd; "d10".."d47", a head's dimensions, are short too but ran together upright).
        e_r = max(1, int(np.ceil(r / max(4, int((h - 60 - below) / (font_size * 0.9))))))
        p_px = max(60.0, width_px - _text_px(ticks(rl, rn, e_r), font_size) - colour_bar_px)
        up = few_short and c * label_px <= p_px
        e_c = max(1, int(np.ceil(c / max(3, int(p_px / (label_px if up else 1.15 * font_size))))))
        return h, e_r, p_px, e_c, up

    # Column labels stand below the plot, tilted ones taking sin(60°) of the longest drawn: in Large text Word
    # senses' "7. money · bank #2" took 230 px of a 330 px chart and left its eight rows 125 px. Laid out once
    # with every label's room, then again with the room of those drawn (a long word thinned out of the axis
    # once left eight rows 600 px).
    def room(every_c: int, upright: bool) -> float:
        if plain_c or upright:
            return 1.5 * font_size
        return 0.87 * _text_px(ticks(cl, cn, every_c), font_size) + font_size

    _, every_r, plot_px, every_c, upright = lay_out(
        room(1, few_short)
    )  # short ones upright, others all drawn
    below = room(every_c, upright)
    height, every_r, plot_px, every_c, upright = lay_out(below)

    def axis(names: list[str], categories: list[str], every: int, plain: bool, **text_only) -> dict:
        if every > 1 and plain:
            # Many plain positions (a vector's dimensions): plotly picks as many as fit the chart's real width,
            # which a page's column may make much narrower than the ~900 px assumed above. (A few are all
            # written: plotly's own choice for 2 to 5 could be 0.5 steps.)
            return {}
        return {
            "type": "linear" if plain else "category",
            "tickmode": "array",
            # A category's own name, not its place: plotly reads a number as the category so named first, so
            # the tick meant for place 4 went to a column named "4" (Sentence vector's 1, 3, 4, _).
            "tickvals": list(range(0, len(names), every)) if plain else categories[::every],
            "ticktext": ticks(names, categories, every),
        } | text_only

    fig.update_layout(
        xaxis=axis(cl, cn, every_c, plain_c, tickangle=0 if upright else -60),
        yaxis=axis(rl, rn, every_r, plain_r) | {"autorange": "reversed"},
    )
    # As many colour-bar values as its height holds at this text size: a short chart's ran together in Large
    # text ("1/0.5/0/−0.5/−1" in 100 px).
    fig.update_traces(colorbar={"nticks": max(3, int((height - 60 - below) / (2.5 * font_size)))})
    if cell_numbers is not None:
        # a cell's width against its widest number: sized for "-0.00" whatever the values, the projector's
        # four cosines (0.79, 0.51, ...) were left to the hover in Large text at 1024 px, with room for them
        cells = [[f"{v:.2f}" for v in row] for row in matrix]
        written = plot_px / c >= _text_px([t for row in cells for t in row], cell_numbers) + 4
        if written:
            write_cells(fig, cells, cell_numbers)
        fig.update_layout(meta={"cells_written": written})
    return _layout(fig, title, height, font_size)


NO_CELL_NUMBERS = (
    "Too little room for a number in each cell at this width: hover a cell, or download the CSV."
)


def scale_colour(scale: Sequence[Sequence], t: float) -> str:
    """The "#rrggbb" a plotly colour scale ((position, colour), ...) gives at `t` in [0, 1], interpolated in RGB
    between its stops as plotly draws it."""
    stops = [(float(p), _hex_rgb(c)) for p, c in scale]
    t = min(max(t, stops[0][0]), stops[-1][0])
    for (p0, c0), (p1, c1) in zip(stops, stops[1:]):  # noqa: B905 (one shorter, on purpose)
        if t <= p1:
            f = 0.0 if p1 == p0 else (t - p0) / (p1 - p0)
            return "#" + "".join(f"{round(a + f * (b - a)):02x}" for a, b in zip(c0, c1, strict=True))
    return "#" + "".join(f"{v:02x}" for v in stops[-1][1])


def write_cells(fig: go.Figure, texts: Sequence[Sequence[str]], size: int) -> go.Figure:
    """Write `texts` (R, C) in the cells of `fig`'s heatmap (its first trace, its colorscale set), each in black
    or white, whichever contrasts more with its cell (`ink`). Plotly's own pick for a heatmap's texttemplate
    was #444 on mid blue (3.4:1) and white on the roles' green (3.2:1), and its text colour cannot vary by
    cell: so a text trace over the map, which takes no hover (the map's own hover still names the cell).
    Call it once the y axis's direction is set: a numeric axis keeps the map's extent, in that direction."""
    trace = fig.data[0]
    if trace.colorscale is None:  # (every heatmap here names its scale: plotly's default is not known here)
        raise ValueError("write_cells needs the heatmap's colorscale set")
    z = np.asarray(trace.z, dtype=np.float64)  # (R, C)
    finite = z[np.isfinite(z)]
    if not finite.size:
        return fig
    low = trace.zmin if trace.zmin is not None else float(finite.min())
    high = trace.zmax if trace.zmax is not None else float(finite.max())
    if (
        trace.zmin is None and trace.zmax is None and trace.zmid is not None
    ):  # plotly centres an auto range on zmid
        reach = max(abs(high - trace.zmid), abs(trace.zmid - low))
        low, high = trace.zmid - reach, trace.zmid + reach
    span = (high - low) or 1.0

    def colour(v: float) -> str:
        t = (v - low) / span
        return scale_colour(trace.colorscale, 1.0 - t if trace.reversescale else t)

    xs = list(trace.x) if trace.x is not None else list(range(z.shape[1]))
    ys = list(trace.y) if trace.y is not None else list(range(z.shape[0]))
    points = [
        (i, j) for i in range(z.shape[0]) for j in range(z.shape[1]) if np.isfinite(z[i, j]) and texts[i][j]
    ]
    fig.add_trace(
        go.Scatter(
            x=[xs[j] for _, j in points],
            y=[ys[i] for i, _ in points],
            mode="text",
            text=[texts[i][j] for i, j in points],
            textfont={"size": size, "color": [ink(colour(z[i, j])) for i, j in points]},
            hoverinfo="skip",
            showlegend=False,
            name="cell text",
        )
    )
    # A text trace pads a numeric axis by 5 % each side (a token strip gained blank bands at its ends): the
    # axes keep the map's own extent. (Category axes are laid out by their categories, and keep it anyway.)
    if not isinstance(xs[0], str):
        fig.update_xaxes(range=[-0.5, z.shape[1] - 0.5], autorange=False)
    if not isinstance(ys[0], str):
        down = fig.layout.yaxis.autorange == "reversed"
        # (a range given in reverse draws the rows downwards; "reversed" autorange would pad again)
        fig.update_yaxes(
            range=[z.shape[0] - 0.5, -0.5] if down else [-0.5, z.shape[0] - 0.5], autorange=False
        )
    return fig


def cells_written(fig: go.Figure) -> bool:
    """Whether `heatmap(cell_numbers=...)` found room to write each cell's value."""
    return bool((fig.layout.meta or {}).get("cells_written"))


def vector_strips(
    vectors: np.ndarray,
    row_labels: Sequence[str],
    *,
    title: str | None = None,
    font_size: int = BASE_FONT,
    height: int | None = None,
    width_px: int | None = None,
    numbered: bool = False,
) -> go.Figure:
    """vectors (K, H) as K strips of H dimensions, red below zero and blue above (white at 0); `width_px` as
    in `heatmap` (a strip in half a page: ~400, so its dimension numbers are thinned to fit). `numbered`: the
    rows are names of their own ("segment A (0)"), not tokens, so no position is added before them."""
    v = np.asarray(vectors)
    fig = heatmap(
        v,
        row_labels,
        [str(d) for d in range(v.shape[1])],
        title=title,
        colorscale="RdBu",
        font_size=font_size,
        height=height,
        width_px=width_px,
        numbered=numbered,
    )
    fig.update_traces(zmid=0.0, hovertemplate="%{y}<br>dimension %{x}: %{z:.4f}<extra></extra>")
    # A short strip's colour bar holds two or three values: the data's lowest and highest and 0, written out
    # (plotly's own choice of at most three "nice" values left only the 0 of a small range).
    finite = v[np.isfinite(v)]
    if height is not None and height < 300 and finite.size:
        ends = [float(finite.min()), float(finite.max())]
        marks = sorted({ends[0], ends[1], *([0.0] if ends[0] < 0 < ends[1] else [])})
        fig.update_traces(colorbar={"tickvals": marks, "ticktext": [f"{m:.2g}" for m in marks]})
    return fig


EDGE = 0.6  # the head view's room for token names beyond each end of its lines (which run from x=0 to 1)


def head_view(
    left: Sequence[str],
    right: Sequence[str],
    weights: np.ndarray,
    *,
    head_numbers: Sequence[int] | None = None,
    focus: int | None = None,
    focus_to: int | None = None,
    min_weight: float = 0.0,
    top_k: int | None = None,
    title: str | None = None,
    font_size: int = BASE_FONT,
) -> go.Figure:
    """Lines from each token on the left to the tokens it attends to on the right; width and opacity = weight.

    weights (R, C): row i is the attention of left token i; or (N, R, C), heads overlaid, numbered
    `head_numbers` (1-based; default 1..N) in the legend and coloured by that number. focus: draw only row `focus` (what that token
    attends to); focus_to: draw only column `focus_to` (what attends to that token). Lines below
    `min_weight`, or outside each row's `top_k`, are left out (to keep large inputs light). Lines are
    binned by weight into a few traces rather than one trace per line. Each token's name lies over a
    transparent bar with customdata ["from", i] or ["to", j], so a click on it can isolate it.
    """
    if focus is not None and focus_to is not None:
        raise ValueError("isolate a token on one side only: focus or focus_to")
    w = np.asarray(weights, dtype=np.float32)
    # (R, C) is one map in blue; (N, R, C) is every head at once, one colour and one legend entry per head
    # (a click on the legend hides or shows a head), each head's lines in its own lane around the token.
    stacked = w.ndim == 3
    maps = w if stacked else w[None]
    n_maps, r, c = maps.shape
    rows = range(r) if focus is None else [focus]
    bins = np.linspace(0.0, 1.0, 9)
    fig = go.Figure()
    numbers = list(head_numbers) if head_numbers is not None else list(range(1, n_maps + 1))
    for h in range(n_maps):
        lane = (h - (n_maps - 1) / 2) * 0.6 / n_maps if stacked else 0.0
        number = numbers[h]
        segments: dict[int, tuple[list, list]] = {}
        for i in rows:
            row = maps[h, i]
            cols = np.arange(c)
            if focus_to is not None:
                cols = np.array([focus_to])
            elif top_k is not None and top_k < c:
                cols = np.argsort(-row, kind="stable")[:top_k]
            for j in cols:
                v = float(row[j])
                if v < min_weight or v <= 0:
                    continue
                b = int(np.clip(np.searchsorted(bins, v) - 1, 0, len(bins) - 2))
                xs, ys = segments.setdefault(b, ([], []))
                xs += [0.0, 1.0, None]
                ys += [i + lane, j + lane, None]
        color = HEAD_COLORS[(number - 1) % len(HEAD_COLORS)]  # a head keeps its colour when others are hidden
        rgb = _hex_rgb(color) if stacked else (76, 155, 232)
        for b in sorted(segments):
            xs, ys = segments[b]
            mid = (bins[b] + bins[b + 1]) / 2
            fig.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines",
                    line={
                        "width": 0.5 + 9 * mid,
                        "color": "rgba({},{},{},{:.2f})".format(*rgb, 0.15 + 0.85 * mid),
                    },
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=f"head {number}" if stacked else None,
                    name=f"head {number}" if stacked else f"weight {bins[b]:.2f}–{bins[b + 1]:.2f}",
                )
            )
        if stacked:
            # The legend entry: an empty trace in the head's full colour (its own lines may all be faint).
            fig.add_trace(
                go.Scatter(
                    x=[None],
                    y=[None],
                    mode="lines",
                    line={"width": 4, "color": color},
                    legendgroup=f"head {number}",
                    name=f"head {number}",
                    hoverinfo="skip",
                )
            )
    for side, x, names, isolated, position in (
        ("from", 0.0, left, focus, "middle left"),
        ("to", 1.0, right, focus_to, "middle right"),
    ):
        n = len(names)
        hint = "what it attends to" if side == "from" else "what attends to it"
        # In the theme's text colour (a fixed #333 was 1.4:1 on the dark theme's page), the isolated token
        # in a trace of its own
        shown = labels(names)
        for name, texts, colour in (
            (f"{side} tokens", [t if k != isolated else "" for k, t in enumerate(shown)], None),
            (
                f"{side} token isolated",
                [t if k == isolated else "" for k, t in enumerate(shown)],
                TOKEN_COLORS["unk"],
            ),
        ):
            if colour is not None and isolated is None:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[x] * n,
                    y=list(range(n)),
                    mode="text",
                    text=texts,
                    textposition=position,
                    # bold as well as red: no one red reads 4.5:1 on both themes' pages (3.7 and 4.9 here)
                    textfont={"size": font_size} | ({"color": colour, "weight": "bold"} if colour else {}),
                    hoverinfo="skip",
                    showlegend=False,
                    name=name,
                )
            )
        # Transparent bars under the tokens, from the lines' end to the chart's edge, are what a click lands
        # on: the page isolates that token. (Text is not clickable, and a marker at the line's end was the
        # only target: a click on the word itself did nothing.)
        fig.add_trace(
            go.Bar(
                y=list(range(n)),
                x=[-EDGE if side == "from" else EDGE] * n,
                base=[x] * n,
                orientation="h",
                width=0.9,
                marker={"color": "rgba(0,0,0,0)"},
                text=labels(names),
                textposition="none",
                customdata=[[side, k] for k in range(n)],
                hovertemplate=f"%{{text}}: click to show {hint}<extra></extra>",
                showlegend=False,
                name=side,
            )
        )
    fig.update_layout(
        xaxis={"visible": False, "range": [-EDGE, 1 + EDGE], "fixedrange": True},
        barmode="overlay",  # a row's left and right bars each its full height, not grouped into halves
        # An explicit range: autorange pads a long token column with ~10 % empty space at both ends.
        yaxis={"visible": False, "range": [max(r, c) - 0.5, -0.5]},
        plot_bgcolor="rgba(0,0,0,0)",
        # The legend is a key only: a head hidden there would come back on the next redraw (Streamlit draws
        # the figure afresh), so the page chooses heads with a widget instead.
        legend={
            "orientation": "h",
            "y": 1.02,
            "yanchor": "bottom",
            "x": 0,
            "itemclick": False,
            "itemdoubleclick": False,
        },
    )
    height = int(min(2400, max(300, 60 + 20 * max(r, c) * font_size / BASE_FONT)))
    return _layout(fig, title, height, font_size)


def model_view(
    thumbs: np.ndarray,
    *,
    selected: tuple[int, int | None] | None = None,
    roles: Sequence[Sequence[str | None]] | None = None,
    title: str | None = None,
    font_size: int = BASE_FONT,
) -> go.Figure:
    """All layers × heads as small attention maps in one mosaic heatmap, plus one clickable marker per map;
    `roles` (L rows of N, a role name or None) are written under each map (Clark et al., 2019). `selected`
    (layer, head), 0-based, is outlined; a head of None outlines the layer's whole row (the mean of its heads).

    thumbs (L, N, Tr, Tc). The marker trace ("pick") carries customdata [layer, head] (1-based), so a click
    (Streamlit point selection) says which map to open.
    """
    thumbs = np.asarray(thumbs, dtype=np.float32)
    n_layers, n_heads, tr, tc = thumbs.shape
    gap = max(1, max(tr, tc) // 8)
    cell_r, cell_c = tr + gap, tc + gap
    mosaic = np.full((n_layers * cell_r - gap, n_heads * cell_c - gap), np.nan, dtype=np.float32)
    for layer in range(n_layers):
        for head in range(n_heads):
            mosaic[layer * cell_r : layer * cell_r + tr, head * cell_c : head * cell_c + tc] = thumbs[
                layer, head
            ]
    finite = np.isfinite(mosaic)
    fig = go.Figure(
        go.Heatmap(
            z=mosaic,
            colorscale="Blues",
            zmin=0.0,
            zmax=float(np.nanmax(mosaic)) if finite.any() else 1.0,
            showscale=False,
            hoverinfo="skip",
            name="maps",
        )
    )
    centers = [(layer, head) for layer in range(n_layers) for head in range(n_heads)]
    fig.add_trace(
        go.Scatter(
            x=[h * cell_c + (tc - 1) / 2 for _, h in centers],
            y=[l_ * cell_r + (tr - 1) / 2 for l_, _ in centers],
            customdata=[[l_ + 1, h + 1] for l_, h in centers],
            mode="markers",
            marker={"size": 28, "color": "rgba(0,0,0,0)", "symbol": "square"},
            hovertemplate="layer %{customdata[0]}, head %{customdata[1]}: click to open<extra></extra>",
            name="pick",
            showlegend=False,
        )
    )
    if roles is not None:
        for layer, row in enumerate(roles):
            for head, role in enumerate(row):
                if role:
                    # Inside its own map, on a light band at the map's bottom edge, growing up (the y axis is
                    # reversed): written below the map, it sat on the next row's map and read as that one's.
                    fig.add_annotation(
                        x=head * cell_c + (tc - 1) / 2, y=layer * cell_r + tr - 0.5, text=label(role),
                        showarrow=False, yanchor="bottom", bgcolor="rgba(255,255,255,0.85)", borderpad=1,
                        font={"size": max(9, font_size - 3), "color": ACCENT_TEXT},
                    )  # fmt: skip
    if selected is not None:
        layer, head = selected
        first, last = (0, n_heads - 1) if head is None else (head, head)
        fig.add_shape(
            type="rect",
            x0=first * cell_c - 0.5,
            x1=last * cell_c + tc - 0.5,
            y0=layer * cell_r - 0.5,
            y1=layer * cell_r + tr - 0.5,
            line={"color": "#e4572e", "width": 3},
        )
    fig.update_layout(
        xaxis={
            "tickmode": "array",
            "tickvals": [h * cell_c + (tc - 1) / 2 for h in range(n_heads)],
            "ticktext": [f"H{h + 1}" for h in range(n_heads)],
            "side": "top",
            "showgrid": False,
            "zeroline": False,
        },
        yaxis={
            "tickmode": "array",
            "tickvals": [l_ * cell_r + (tr - 1) / 2 for l_ in range(n_layers)],
            "ticktext": [f"L{l_ + 1}" for l_ in range(n_layers)],
            "autorange": "reversed",
            "showgrid": False,
            "zeroline": False,
        },
        clickmode="event+select",
        dragmode=False,
    )
    height = int(min(1400, 80 + 60 * n_layers * max(1.0, 12 / max(n_heads, 1)) ** 0.5))
    return _layout(fig, title, height, font_size)


# -- bars and lines -------------------------------------------------------------------------------------


def small_number(v: float) -> str:
    """Two significant digits of a small nonzero value (a bar's under 0.0005, a table's under 0.00005): in
    decimals from a millionth up, e-notation below."""
    if abs(v) < 1e-6:
        return f"{v:.1e}"
    rounded = float(f"{v:.1e}")  # two digits, a carry included (0.0000999 is 0.00010, not 0.000100)
    return f"{rounded:.{1 - math.floor(math.log10(abs(rounded)))}f}"


def bars(
    names: Sequence[str],
    values: Sequence[float],
    *,
    title: str | None = None,
    value_name: str = "value",
    horizontal: bool = True,
    range_max: float | None = None,
    font_size: int = BASE_FONT,
    color: str = "#4c9be8",
    width_px: int | None = None,
) -> go.Figure:
    """One bar per name (e.g. top-k predictions with their probabilities). Names are kept in order.
    `width_px`: about how wide the chart is drawn (a half-width column: ~400), for the room its values need."""
    idx = list(range(len(names)))
    # A value too small for three decimals keeps its size and sign: a near-certain piece's log-probability of
    # -0.0002 read "-0.000", and a tiny probability "0.000", as if it were none. Two digits of it, in decimals
    # down to a millionth ("-0.00046" beside "-0.001": a room read "-4.6e-04" as another kind of number).
    text = [small_number(v) if 0 < abs(v) < 0.0005 else f"{v:.3f}" for v in values]
    width_px = width_px or page_px(font_size)
    # Values always outside their bar, at the chart's text size: inside, plotly shrinks them to fit thin bars
    # (7 px), which nobody at the back of a room can read. The axis leaves room for them past range_max.
    # constraintext: plotly also shrinks a value outside its bar to the bar's width (NSP's two bars' values).
    outside = {
        "textposition": "outside",
        "textfont": {"size": font_size},
        "cliponaxis": False,
        "constraintext": "none",
    }
    # Without a fixed range, room for the values past both ends: plotly's own range ends at the longest bar,
    # and a negative bar's value then sat on the token labels.
    finite = np.asarray(values, dtype=np.float64)
    finite = np.concatenate([[0.0], finite[np.isfinite(finite)]])
    low, high = float(finite.min()), float(finite.max())
    # The room a value needs, as a share of the bars' span: its width over what the names, the values at
    # both ends and the margins leave of the chart (in Large text a half-width chart's "-0.659" sat on the
    # names, "4.281" lost its last digit at the edge).
    text_px = _text_px(text, font_size) + 8
    names_px = _text_px(labels(names), font_size) if horizontal else 0.0
    # Room for values past each end a bar reaches: the left only if one is negative, the right only if one is
    # positive (log-probabilities, all negative, had an axis running on to +10, which none can reach) or zero
    # (plotly writes a bar of none's value on its right).
    right = high > 0 or low >= 0 or bool(np.any(np.asarray(values, dtype=np.float64) == 0))
    ends = max(1, (low < 0) + right)
    plot_px = max(60.0, (width_px if horizontal else 360) - names_px - 40 - ends * text_px)
    share = max(0.18, text_px / plot_px)
    pad = share * (high - low)
    padded = [low - pad if low < 0 else 0.0, high + pad if right else 0.0] if pad > 0 else None
    if horizontal:
        trace = go.Bar(x=list(values), y=idx, orientation="h", text=text, marker_color=color, **outside)
        fig = go.Figure(trace)
        xaxis = {"title": {"text": value_name}}
        if range_max:
            ticks = np.linspace(0, range_max, 6).round(6).tolist()
            xaxis |= {"range": [0, range_max * (1 + share)], "tickvals": ticks}
        elif padded:
            xaxis |= {"range": padded}
        fig.update_layout(
            yaxis={"tickmode": "array", "tickvals": idx, "ticktext": labels(names), "autorange": "reversed"},
            xaxis=xaxis,
        )
        height = 80 + 28 * len(names) * font_size // BASE_FONT
    else:
        fig = go.Figure(go.Bar(x=idx, y=list(values), text=text, marker_color=color, **outside))
        fig.update_layout(
            xaxis={"tickmode": "array", "tickvals": idx, "ticktext": labels(names), "tickangle": -60},
            yaxis={"title": {"text": value_name}} | ({"range": padded} if padded else {}),
        )
        height = 360
    # The bar's name with its value: the value alone left a reader to match a hovered bar to its label.
    # Escaped as the axis labels are (label()): plotly reads tags in hover text.
    fig.data[0].customdata = labels(names)
    fig.data[0].hovertemplate = "%{customdata}: %{text}<extra></extra>"
    return _layout(fig, title, int(height), font_size)


def grouped_bars(
    categories: Sequence[str],
    series: dict[str, Sequence[float]],
    *,
    title: str | None = None,
    value_name: str = "value",
    font_size: int = BASE_FONT,
    width_px: int | None = None,
) -> go.Figure:
    """Several values per category (e.g. the norm of each embedding component per token).

    Above GROUPED_BARS_LIMIT categories the series are drawn as lines (thousands of bars took the browser
    ~10 s at 512 tokens). Only every n-th category is labelled where more would run together in a chart
    `width_px` wide (hover names each one): 128 tokens' labels piled up."""
    n = len(categories)
    idx = list(range(n))
    names = labels(categories)
    many = n > GROUPED_BARS_LIMIT
    fig = go.Figure()
    for i, (name, values) in enumerate(series.items()):
        common = dict(
            name=label(name),
            x=idx,
            y=list(values),
            customdata=names,
            hovertemplate=f"%{{customdata}}: %{{y:.4g}}<extra>{label(name)}</extra>",
        )
        if many:
            fig.add_trace(
                go.Scatter(mode="lines", line={"color": SEQUENCE_COLORS[i % 8], "width": 1.5}, **common)
            )
        else:
            fig.add_trace(go.Bar(marker_color=SEQUENCE_COLORS[i % 8], **common))
    # Labels tilted by 60° stand 1.15 text heights apart at the least, beside the value axis (~80 px)
    fit = max(
        3, min(GROUPED_BARS_LIMIT, int(max(60, (width_px or page_px(font_size)) - 80) / (1.15 * font_size)))
    )
    step = max(1, -(-n // fit))  # ceil(n / fit)
    fig.update_layout(
        barmode="group",
        xaxis={"tickmode": "array", "tickvals": idx[::step], "ticktext": names[::step], "tickangle": -60},
        # from 0 as the bars are: drawn as lines, 128 tokens' LayerNorm lengths of 13.6 to 13.95 filled the
        # axis and read as wildly uneven, under a caption saying LayerNorm evens them out
        yaxis={"title": {"text": value_name}, "rangemode": "tozero"},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
    )
    return _layout(fig, title, 380, font_size)


def lines(
    x: Sequence[float],
    series: dict[str, Sequence[float]],
    *,
    title: str | None = None,
    x_name: str = "layer",
    value_name: str = "value",
    font_size: int = BASE_FONT,
    colours: dict[str, str] | None = None,
) -> go.Figure:
    """One line per series, coloured in order, or by name from `colours` where a series' colour is its meaning
    (Word senses' "different sense" is orange whether or not the "same sense" line before it is drawn)."""
    fig = go.Figure()
    for i, (name, values) in enumerate(series.items()):
        fig.add_trace(
            go.Scatter(
                x=list(x),
                y=list(values),
                mode="lines+markers",
                name=label(name),
                line={"color": (colours or {}).get(name, SEQUENCE_COLORS[i % 8]), "width": 3},
                marker={"size": 8},
            )
        )
    fig.update_layout(
        xaxis={"title": {"text": x_name}, "dtick": 1},
        yaxis={"title": {"text": value_name}},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
    )
    return _layout(fig, title, 420, font_size)


def rank_axis(
    fig: go.Figure, top_rank: float, width_px: int | None = None, *, written: int | None = None
) -> go.Figure:
    """A y axis for ranks (1 = the top prediction) up to `top_rank`: whole numbers from 1, never 0 or 0.5;
    on a log axis once ranks run past 20, so a logit lens's climb from rank 3,000 to 1 keeps the last layers'
    1, 2 and 5 apart instead of flattening them onto the floor of a linear axis. Points are written with their
    rank, which no axis of a few ticks gives exactly: the last point always, the others where their number
    stays clear of the next one written. Laid out for the figure's own text size and height (`_layout`'s)
    and about `width_px` across (as in `heatmap`). Only the first `written` lines get numbers (default all)."""
    font = fig.layout.font.size or BASE_FONT
    plot_h = max(100.0, (fig.layout.height or 420) - (fig.layout.margin.t or 0) - 3 * font - 20)
    plot_w = max(100.0, (width_px or page_px(font)) - 80.0)
    text_h = 1.4 * font  # a line of text, and the room a number needs above its point
    for trace in fig.data[:written]:
        ranks = [float(v) for v in trace.y]
        step = plot_w / max(1, len(ranks) - 1)
        shown: list[str] = [""] * len(ranks)
        kept: int | None = None
        for k in reversed(range(len(ranks))):  # from the last layer's, which is always written
            text = f"{ranks[k]:,.0f}"
            if kept is None or (kept - k) * step >= 0.6 * font * (len(text) + len(shown[kept])) / 2 + 6:
                shown[k], kept = text, k
        # a halo of the background's colour ("auto"): a followed piece's line or marker through a number
        # ("2" over another line's point at rank 3) left it hard to read
        trace.update(
            mode="lines+markers+text", text=shown, textposition="top center", textfont={"shadow": "auto"}
        )
    top = max(1.0, float(top_rank))
    if top > 20:
        low, high = np.log10(0.8), np.log10(top)
        high += (high - low) * text_h / (plot_h - text_h)  # room above the highest point for its number
        # 1, 2, 5 in every decade where a decade holds three lines of text, 1 alone where it holds one, every
        # other power of ten below that: ticks at 1 and 10 only left a rank of 35 to guess, and 1, 2, 5 over
        # five decades of a short chart ran together in Large text
        per_decade = plot_h / (high - low)
        marks = (1, 2, 5) if per_decade >= 3 * text_h else (1,)
        every = 1 if per_decade >= text_h else 2
        ticks = [m * 10**e for e in range(0, int(high) + 1, every) for m in marks if m * 10**e <= 10**high]
        return fig.update_yaxes(
            type="log", range=[low, high], tickvals=ticks, ticktext=[f"{t:,}" for t in ticks]
        )
    room = (top - 0.5) * text_h / (plot_h - text_h)
    return fig.update_yaxes(tick0=1, dtick=max(1, int(np.ceil(top / 8))), range=[0.5, top + 0.5 + room])


def scatter_2d(
    points: np.ndarray,
    groups: Sequence[int],
    group_names: Sequence[str],
    hovers: Sequence[str],
    *,
    title: str | None = None,
    axis_names: tuple[str, str] = ("PC 1", "PC 2"),
    font_size: int = BASE_FONT,
    marker_size: int = 14,
    texts: Sequence[str] | None = None,
    width_px: int | None = None,
) -> go.Figure:
    """Points (P, 2) coloured by group (one trace per group, named by `group_names`). `texts` are written
    beside the points, up to SCATTER_TEXT_LIMIT of them: a projector shows no hover, and unlabelled dots said
    nothing to a room. Each label goes above its point, or below, right or left where that would cover another
    label, as far as about how wide the chart is drawn (`width_px`, as in `heatmap`) tells."""
    points = np.asarray(points, dtype=np.float32)
    written = texts is not None and len(points) <= SCATTER_TEXT_LIMIT
    if written and len(points):
        # The axes' ranges, set below: room above the highest point for its label, which the plot's edge cut
        # in half; and beside the outermost ones for half a label's width each way ("1 · bank #1" at the right
        # edge lost its last character).
        low, high = float(points[:, 1].min()), float(points[:, 1].max())
        pad = (high - low or 1.0) * 0.08
        y_range = [low - pad, high + 2 * pad]
        left, right = float(points[:, 0].min()), float(points[:, 0].max())
        side = (right - left or 1.0) * 0.12
        x_range = [left - side, right + side]
        # Points at one place (one vector, as one word at one position is at layer 0) share one label naming
        # them all, which four places around a dot could not hold apart ("1" over "5 · bank #1").
        # (the one rule of Word senses' caption that names them, transforms.same_rows)
        shown = [label(t) for t in texts]
        for first, *others in transforms.same_rows(points):
            shown[first] = ", ".join(shown[i] for i in (first, *others))
            for i in others:
                shown[i] = ""
        places = label_places(
            points,
            shown,
            x_range,
            y_range,
            font_size,
            marker_size,
            width_px or page_px(font_size),
        )
    fig = go.Figure()
    # A legend entry cut short: a long sense ("money and financial institutions") took a Large-text chart's
    # width for its legend and left the plot 114 px; each point's hover names its group whole.
    most = 28 if font_size <= BASE_FONT else 16
    for g, name in enumerate(group_names):
        idx = [i for i, gi in enumerate(groups) if gi == g]
        if not idx:
            continue
        fig.add_trace(
            go.Scatter(
                x=points[idx, 0],
                y=points[idx, 1],
                mode="markers+text" if written else "markers",
                name=label(name if len(name) <= most else name[: most - 1] + "…"),
                marker={
                    "size": marker_size,
                    "color": SEQUENCE_COLORS[g % 8],
                    "line": {"width": 1, "color": "#fff"},
                },
                hovertext=[label(hovers[i]) for i in idx],
                hoverinfo="text",
                **(
                    {
                        "text": [shown[i] for i in idx],
                        "textposition": [places[i] for i in idx],
                        "textfont": {"size": font_size - 1},
                    }
                    if written
                    else {}
                ),  # fmt: skip
            )
        )
    fig.update_layout(
        xaxis={"title": {"text": axis_names[0]}, "zeroline": False},
        yaxis={"title": {"text": axis_names[1]}, "zeroline": False},
        legend={"orientation": "v"},
    )
    if written and len(points):
        fig.update_yaxes(range=y_range)
        fig.update_xaxes(range=x_range)
    return _layout(fig, title, 460, font_size)


SCATTER_PLOT_PX = 340  # about how tall a scatter's plot is drawn (its 460 px less the title and the x axis)


def label_places(
    points: np.ndarray,
    texts: Sequence[str],
    x_range: Sequence[float],
    y_range: Sequence[float],
    font_size: int,
    marker_size: int,
    width_px: int,
) -> list[str]:
    """A plotly textposition for each point's label: above it unless that covers a label already placed (the
    highest points first) or another point, or runs past the plot's edge, then below, right or left; where
    every place is taken, the one covered least. Placed in pixels, from the axes' ranges and about how large
    the plot is drawn."""
    plot_w = max(100.0, width_px - 120.0)  # the legend and the y axis's labels take the rest
    sx, sy = plot_w / (x_range[1] - x_range[0]), SCATTER_PLOT_PX / (y_range[1] - y_range[0])
    at = [((x - x_range[0]) * sx, (y - y_range[0]) * sy) for x, y in np.asarray(points, dtype=np.float64)]
    r, h = marker_size / 2 + 2, font_size * 1.2

    def box(k: int, place: str) -> tuple[float, float, float, float]:
        x, y = at[k]
        w = _text_px([texts[k]], font_size)
        cx, cy = {
            "top center": (x, y + r + h / 2),
            "bottom center": (x, y - r - h / 2),
            "middle right": (x + r + w / 2, y),
            "middle left": (x - r - w / 2, y),
        }[place]
        return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2

    def covered(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))

    def outside(b: tuple[float, ...]) -> float:  # what the plot's edges would cut off
        area = (b[2] - b[0]) * (b[3] - b[1])
        return area - covered(b, (0.0, 0.0, plot_w, SCATTER_PLOT_PX))

    dots = [(x - r, y - r, x + r, y + r) for x, y in at]
    placed: list[tuple[float, float, float, float]] = []
    places = ["top center"] * len(at)
    for k in sorted(range(len(at)), key=lambda k: -at[k][1]):
        costs = []
        for place in ("top center", "bottom center", "middle right", "middle left"):
            b = box(k, place)
            cost = sum(covered(b, o) for o in placed) + sum(covered(b, d) for d in dots) + outside(b)
            costs.append((round(cost, 3), place, b))  # a label touching its own dot covers 1e-15 px² of it
        _, places[k], chosen = min(costs, key=lambda c: c[0])  # the first of equals: above, if it is free
        placed.append(chosen)
    return places


SCATTER_TEXT_LIMIT = 40  # points a scatter writes its labels beside; more would cover each other


def token_strip(
    tokens: Sequence[str],
    values: Sequence[float],
    *,
    title: str,
    zmin: float,
    zmax: float,
    colorscale,
    value_name: str,
    value_format: str = ".3f",
    font_size: int = BASE_FONT,
    per_row: int | None = None,
) -> go.Figure:
    """Tokens in reading order, each cell coloured by its value and the token written in it (as text, never
    markup), the value on hover: replaced-token probabilities, attributions. One row, or rows of `per_row`
    tokens (R rows, the last padded with empty cells) where a narrow column would crowd the labels."""
    flat = np.asarray(values, dtype=np.float32)  # (S,)
    width = max(1, len(flat) if per_row is None else min(per_row, len(flat)))
    rows = max(1, -(-len(flat) // width))
    z = np.full(rows * width, np.nan, dtype=np.float32)
    z[: len(flat)] = flat
    z = z.reshape(rows, width)  # (R, width)
    names = [label(t) for t in tokens] + [""] * (rows * width - len(flat))
    shown = [format(v, value_format) for v in flat] + [""] * (rows * width - len(flat))
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=np.arange(width),
            y=np.arange(rows),
            zmin=zmin,
            zmax=zmax,
            colorscale=colorscale,
            text=[names[r * width : (r + 1) * width] for r in range(rows)],
            customdata=[shown[r * width : (r + 1) * width] for r in range(rows)],
            hovertemplate="%{text}: " + label(value_name) + " %{customdata}<extra></extra>",
            hoverongaps=False,
            colorbar=dict(title=value_name),
        )
    )
    # Plotly's texttemplate would shrink every label to fit the longest in its cell: 8 px, unreadable on a
    # projector; written over the cells at one size, each in the ink its cell's colour needs.
    fig.update_yaxes(visible=False, autorange="reversed")
    write_cells(fig, fig.data[0].text, font_size - 2)
    fig.update_xaxes(visible=False)
    return _layout(fig, title, int(100 + rows * (40 + 2 * font_size)), font_size)


def strip_row(tokens: Sequence[str], font_size: int, width_px: int | None = None) -> int:
    """Tokens a strip row of a chart about `width_px` wide holds: as many as the longest label allows (drawn
    2 px smaller than the text) beside the colour bar and its title, at least 3, at most STRIP_ROW."""
    cell_px = _text_px([label(t) for t in tokens], font_size - 2) + 12
    colour_bar_px = 60 + 4 * font_size  # ~150 px at Large text's 22 px (measured in Chromium)
    return max(3, min(STRIP_ROW, int(((width_px or page_px(font_size)) - colour_bar_px) // max(cell_px, 1))))


def replaced_strip(
    tokens: Sequence[str],
    probabilities: Sequence[float],
    *,
    title: str,
    font_size: int = BASE_FONT,
    per_row: int | None = None,
    width_px: int | None = None,
) -> go.Figure:
    """Tokens coloured by the probability that each was replaced (ELECTRA's discriminator): white at 0, red at 1.
    In rows of `per_row`, or as many as fit a chart `width_px` wide (strip_row)."""
    return token_strip(
        tokens, probabilities, title=title, zmin=0.0, zmax=1.0, colorscale=[[0.0, "#ffffff"], [1.0, "#d62728"]],
        value_name="P(replaced)", font_size=font_size, per_row=per_row or strip_row(tokens, font_size, width_px),
    )  # fmt: skip


# What the saliency strips' colours mean, for the note under each (`saliency_strip`'s "RdBu")
STRIP_COLOURS = "Blue pushed the explained score up, red down."


def saliency_strip(
    tokens: Sequence[str],
    scores: Sequence[float],
    *,
    title: str,
    font_size: int = BASE_FONT,
    width_px: int | None = None,
) -> go.Figure:
    """Tokens coloured by their attribution, centred on zero: blue for the target, red against it, as blue is
    what helped on head importance and what is alike on the cosine maps (red for the target here read the
    other way round beside them). In rows of
    at most STRIP_ROW tokens, fewer for longer labels or larger text: one row of a long input piled its
    labels up."""
    bound = float(np.abs(np.asarray(scores, dtype=np.float32)).max(initial=0.0)) or 1.0
    return token_strip(
        tokens, scores, title=title, zmin=-bound, zmax=bound, colorscale="RdBu", value_name="attribution",
        value_format="+.3g", font_size=font_size, per_row=strip_row(tokens, font_size, width_px),  # +.3g: a tiny share reads as itself, not +0.0000
    )  # fmt: skip


STRIP_ROW = 10  # the most tokens a strip row holds, however short their labels


CHIP_CHARS = 60  # the longest chip span_chips draws at the normal size; a row holds about 70 characters
ROW_CHARS = 70


def _chunks(text: str, limit: int = CHIP_CHARS) -> list[str]:
    """`text` as consecutive pieces of at most `limit` characters, cut after a space where there is one,
    which joined give `text` back exactly."""
    out = []
    while len(text) > limit:
        cut = text.rfind(" ", 0, limit) + 1
        if not cut:
            # No space (Thai, Chinese, a long word): never inside a character as it is drawn, a base and its
            # marks ("ड़ा"), or an emoji of several code points (a ZWJ family, a skin tone), which split into two
            # chips drew a lone vowel sign and a dangling joiner.
            cut = limit
            while cut > 1 and (_joins_before(text[cut]) or text[cut - 1] == "\u200d"):
                cut -= 1
            # nor between the two letters of a flag (🇺🇸 is two regional indicators): an odd run before the cut
            flag = lambda c: 0x1F1E6 <= ord(c) <= 0x1F1FF  # noqa: E731
            run = next((k for k in range(cut) if not flag(text[cut - 1 - k])), cut)
            if run % 2 and flag(text[cut]):
                cut -= 1
            if cut == 1:
                cut = limit  # one cluster longer than a chip: cut where the limit falls after all
        out.append(text[:cut])
        text = text[cut:]
    return [*out, text] if text or not out else out


def _joins_before(ch: str) -> bool:
    """Whether `ch` belongs to the character before it: a combining mark, a joiner, a variation selector, an
    emoji skin tone or tag."""
    code = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Mc", "Me")
        or ch in "\u200c\u200d"
        or 0xFE00 <= code <= 0xFE0F
        or 0x1F3FB <= code <= 0x1F3FF
        or 0xE0020 <= code <= 0xE007F
    )


# A span_chips label for text past what the model reads: drawn hollow, apart from "other text", which the model
# read and found nothing in (a cut-off half of a long text looked like that)
NOT_READ = "not read (cut off)"


def span_chips(
    pieces: Sequence[tuple[str, str | None]],
    *,
    title: str,
    font_size: int = BASE_FONT,
    all_labels: Sequence[str] | None = None,
) -> go.Figure:
    """Text as chips: (fragment, label or None) in order; labelled fragments coloured by label, one legend entry
    per label. Bars, not HTML, so typed text never becomes markup (the Tokens page's chips, by span).

    A fragment longer than a row is cut at spaces into chips of at most CHIP_CHARS characters, so a passage
    wraps into rows instead of one chip as wide as the passage (which shrank every row to a hairline). Colours
    follow `all_labels` (every label the model has) in sorted order, so an entity type has the same colour in
    every chart, whichever types each chart holds; without it, the labels of this chart."""
    # A row holds fewer characters as the text grows (Large text's chips shrank their words to fit), and so
    # does a chip.
    row_chars = max(20, ROW_CHARS * BASE_FONT // max(font_size, 1))
    limit = CHIP_CHARS * row_chars // ROW_CHARS
    pieces = [(chunk, kind) for text, kind in pieces for chunk in _chunks(text, limit)]
    widths = [max(len(t), 1) + 1.0 for t, _ in pieces]
    starts, rows, x, row = [], [], 0.0, 0
    for w in widths:
        if x > 0 and x + w > row_chars:
            row, x = row + 1, 0.0
        starts.append(x)
        rows.append(row)
        x += w + 0.4
    fig = go.Figure()
    kinds = list(dict.fromkeys(k for _, k in pieces))
    named = sorted({*(k for k in kinds if k not in (None, NOT_READ)), *(all_labels or ())})
    colours = {kind: SEQUENCE_COLORS[n % 8] for n, kind in enumerate(named)} | {
        None: "#e8e8e8",
        NOT_READ: "#ffffff",
    }
    # Legend in the colours' order, the unlabelled text last: in the order of first appearance, sentence A's
    # legend read PERSON, LOCATION and B's LOCATION, PERSON.
    for kind in [k for k in named if k in kinds] + [k for k in (None, NOT_READ) if k in kinds]:
        idx = [i for i, (_, k) in enumerate(pieces) if k == kind]
        fig.add_trace(
            go.Bar(
                name=label(kind or "other text"),
                orientation="h",
                base=[starts[i] for i in idx],
                x=[widths[i] for i in idx],
                y=[rows[i] for i in idx],
                text=[label(pieces[i][0]) for i in idx],
                textposition="inside",
                insidetextanchor="middle",
                textangle=0,  # plotly turns a short chip's text 90° to fit it (a one-word answer in large text)
                marker_color=colours[kind],
                textfont={"color": ink(colours[kind])},  # plotly's own pick was #444 on blue (3.3:1)
                marker_line={"color": "#aaaaaa", "width": 1} if kind == NOT_READ else None,
                hovertemplate="%{text}<extra>" + label(kind or "") + "</extra>",
            )
        )
    fig.update_yaxes(autorange="reversed", visible=False)
    fig.update_xaxes(visible=False)
    fig.update_layout(barmode="overlay", bargap=0.25)
    return _layout(fig, title, int(120 + 40 * (max(rows, default=0) + 1) * font_size / BASE_FONT), font_size)


# Half-transparent grey: a light grey on a white page, a dark one on the dark theme's. #eeeeee vanished into the
# white page (1.2:1) and was the brightest cell of the grid on the dark one, where it drew the eye.
NO_ROLE = "rgba(128, 128, 128, 0.3)"


def role_key(labels: list[list[str | None]]) -> tuple[list[str], list[tuple[float, str]]]:
    """The head-role grid's key: its names ("none" only where a head has no role) and a colour scale of one
    flat band per name, for codes 0..len(names)-1 drawn from zmin -0.5 to zmax len(names) - 0.5.

    A continuous scale marked "0" and "2" left the roles to be looked up in the title. A role keeps its colour
    whether or not some head has none."""
    found = sorted({r for row in labels for r in row if r})
    names = (["none"] if any(not r for row in labels for r in row) else []) + found
    colours = [
        NO_ROLE if name == "none" else SEQUENCE_COLORS[found.index(name) % len(SEQUENCE_COLORS)]
        for name in names
    ]
    bands = [
        (edge, colour) for k, colour in enumerate(colours) for edge in (k / len(names), (k + 1) / len(names))
    ]
    return names, bands
