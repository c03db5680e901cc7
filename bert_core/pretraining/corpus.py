"""BERTScope's own pre-training corpus: a seeded generator with a hand-written lexicon and grammar.

Every word and template here was written for the project. A *document* is a short scene on one topic (a
day at the river, a visit to the bank, a cricket match...) told about one person, so consecutive sentences
belong together and next-sentence prediction has something to learn. Deliberately ambiguous words appear in
both senses, each sense in its own topics: bank (river / money), bat (animal / cricket), bark (dog / tree),
match (fire / game), spring (season / coil), pitch (sound / playing field), crane (bird / machine), mouse
(animal / computer), seal (animal / closure), fan (cooling / supporter), trunk (tree / car), letter (mail /
alphabet), plant (garden / factory).

Template syntax: `{slot}` draws from the topic's word lists (or the shared ones below), `(a|b|c)` picks one
alternative, `[text]` is included half the time; they nest. Output is one sentence per line with a blank
line between documents, the layout `read_documents` (and `bertscope pretrain`) reads back.

    python -m bert_core.pretraining.corpus --out assets/corpus/demo_corpus.txt --documents 12000 --seed 0
"""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..checks import check_seed

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Topic:
    name: str
    lines: tuple[str, ...]  # sentence templates
    slots: dict[str, tuple[str, ...]] = field(default_factory=dict)
    senses: dict[str, str] = field(default_factory=dict)  # ambiguous word -> the sense it has in this topic


@dataclass(frozen=True)
class Sentence:
    text: str
    topic: str
    senses: dict[str, str]  # ambiguous words of this topic that the sentence contains -> their sense
    # (slot name, what it expanded to, before tidying) in the order the slots were filled (a slot inside
    # another comes before it): what the fine-tuning lab's role tags and questions are built from
    slots: tuple[tuple[str, str], ...] = ()


FEMALE_NAMES = (
    "Anna",
    "Maria",
    "Sofia",
    "Emma",
    "Lucy",
    "Grace",
    "Nora",
    "Clara",
    "Ella",
    "Mia",
    "Rosa",
    "Julia",
    "Hannah",
    "Alice",
    "Lena",
    "Zoe",
    "Ruth",
    "Amy",
    "Kate",
    "Eva",
    "Nina",
    "Sara",
    "Helen",
    "Laura",
    "Olivia",
    "Priya",
    "Aisha",
    "Mei",
    "Ingrid",
    "Fatima",
)
MALE_NAMES = (
    "Tom",
    "Sam",
    "Ben",
    "Jack",
    "Leo",
    "Max",
    "Noah",
    "Paul",
    "Peter",
    "David",
    "Omar",
    "Ivan",
    "Luke",
    "Adam",
    "Hugo",
    "Felix",
    "Oscar",
    "Daniel",
    "Mark",
    "Ravi",
    "Carlos",
    "Theo",
    "Simon",
    "Victor",
    "Marco",
    "Kenji",
    "Ali",
    "Jonas",
    "Pablo",
    "Arthur",
)
PERSON_NAMES = FEMALE_NAMES + MALE_NAMES
# (subject at the start of a sentence, subject elsewhere, possessive, object)
FIRST_PERSON = (("I", "I", "my", "me"), ("We", "we", "our", "us"))
# Templates whose protagonist takes a present-tense "-s" verb ("{P} has a dog") keep a third-person subject.
_THIRD_PERSON_PRESENT = re.compile(r"^\{P\} (has|is|loves|works)\b")

SHARED_SLOTS: dict[str, tuple[str, ...]] = {
    "time": (
        "in the morning",
        "on monday",
        "last week",
        "after lunch",
        "that evening",
        "early on saturday",
        "yesterday",
        "before dinner",
        "one afternoon",
        "on sunday",
        "at noon",
        "later that day",
        "the next morning",
        "on friday",
        "at dawn",
        "after school",
        "after work",
        # Clock times written as people type them, so digits, ":" and "'" occur in context.
        "at 9 o'clock",
        "at 6 o'clock",
        "at 7:30",
        "at 10:15",
        "at half past 4",
        "at 5 pm",
    ),
    "feel": ("happy", "tired", "calm", "proud", "nervous", "excited", "cheerful", "sleepy", "curious"),
    "relative": (
        "sister",
        "brother",
        "mother",
        "father",
        "uncle",
        "aunt",
        "cousin",
        "grandmother",
        "grandfather",
    ),
}

# Lines any scene may have one of: what people say and remark, so the questions, exclamations, quotes,
# contractions and numbers that users type are pieces the demo model learned in context (the topics' lines
# are plain statements). {s} is the protagonist anywhere but first ("Tom said", "she said", "I said"); none
# of these lines uses an ambiguous word, so a scene's senses stay its topic's.
CHAT_LINES: tuple[str, ...] = (
    '"What a (lovely|beautiful|wonderful) day!" {s} said.',
    '"Are you ready?" asked {F}.',
    '"I can\'t wait," said {F}.',
    '"Where are we going?" asked {F}.',
    "\"Don't worry, it's fine,\" {F} said.",
    '"Let\'s go home," {s} said.',
    '"That was fun!" {s} said with a laugh.',
    '"Did you see that?" {F} asked.',
    '"I\'m so {feel}," said {F}.',
    '"We\'re late!" {F} shouted.',
    '"Isn\'t it (lovely|quiet|warm) here?" asked {F}.',
    '"Who\'s there?" {s} called.',
    '"Thank you!" said {F}.',
    '"Can we stay a bit longer?" {s} asked.',
    '"Wait for me!" {F} called.',
    '"How long will it take?" asked {F}.',
    "It was getting late; {s} (packed up|headed home|said goodbye to {F}).",
    "{F}'s {relative} came along too.",
    "{F} didn't mind the (cold|wait|noise) at all.",
    "There were {count} other people there, maybe more.",
    "It was a well-known spot, and {s} had been there (twice|many times) before.",
    "{F} said it was the best day of the year!",
    "It took {count} minutes to get there, or so it seemed.",
    "Nobody knew what time it was: it felt like (hours|minutes).",
)
CHAT_SLOTS: dict[str, tuple[str, ...]] = {
    "count": ("2", "3", "4", "5", "6", "10", "12", "15", "20", "30", "two", "three", "ten"),
}
# One scene in three has one chat line, never first: a scene opens on its topic.
CHAT_SHARE = 1 / 3
# Negations a person would contract, each contracted half the time ("could not" -> "couldn't").
_CONTRACTIONS = {"could not": "couldn't", "would not": "wouldn't", "did not": "didn't", "was not": "wasn't"}
_NEGATION = re.compile(r"\b(" + "|".join(_CONTRACTIONS) + r")\b")
# A first-person plural subject before "was" ("since we was a child") takes "were".
_WE_WAS = re.compile(r"\b([Ww]e) was\b")
# A first-person protagonist paired with someone ("{P} and {F} had ..."), said with "I" last.
_FIRST_PERSON_PAIR = re.compile(r"\{P\} and (\{F\}|the other workers) ")
# The slots that mention the protagonist, by name or pronoun.
_PROTAGONIST_SLOTS = frozenset({"P", "Name", "s", "he", "his", "him"})

# fmt: off
TOPICS: tuple[Topic, ...] = (
    Topic(
        "river",
        senses={"bank": "river", "trunk": "tree"},
        slots={
            "water": ("river", "stream", "creek", "brook", "canal", "lake", "pond"),
            "fish": ("trout", "salmon", "carp", "pike", "perch", "fish", "eels"),
            "bird": ("ducks", "geese", "swans", "herons", "kingfishers", "moorhens", "otters", "frogs"),
            "bankadj": (
                "grassy", "muddy", "steep", "sandy", "quiet", "shady", "green", "rocky", "slippery", "mossy",
                "overgrown", "low", "narrow", "soft", "stony", "sunny",
            ),
            "side": ("far", "near", "opposite", "north", "south", "east", "west", "other"),
            "boat": ("boat", "canoe", "raft", "kayak", "rowing boat", "dinghy", "punt"),
            "rest": ("sat", "rested", "lay", "waited", "knelt", "sat down", "stretched out", "dozed"),
            "move": ("walked", "wandered", "cycled", "jogged", "strolled", "hiked", "ran", "rode"),
            "pastime": (
                "read a book", "ate a sandwich", "watched the water", "skipped stones", "drew the trees",
                "listened to the birds", "dipped {his} feet in the water", "wrote in {his} diary",
                "took photographs", "played the guitar", "fed the {bird}", "counted the boats",
            ),
            "growth": (
                "Reeds", "Rushes", "Willows", "Nettles", "Wild flowers", "Ferns", "Alder trees", "Tall grasses",
                "Blackberry bushes", "Yellow irises",
            ),
            "light": (
                "in the mist", "under a grey sky", "in the warm sun", "in the fading light", "in the light rain",
                "under the stars", "in the cool breeze", "in the shade of the trees",
            ),
            "gear": ("a fishing rod", "a folding chair", "a blanket", "a flask of tea", "a small tent", "a net"),
            "harm": ("flood", "storm", "spring rain", "high tide", "heavy rain", "melting snow"),
        },
        lines=(
            "{P} {move} along the {bankadj} bank of the {water} {light}.",
            "{P} {move} along the bank of the {water} {time}.",
            "The {boat} drifted toward the {bankadj} {side} bank of the {water}.",
            "{P} {rest} on the {bankadj} bank of the {water} and {pastime}.",
            "{P} {rest} on the bank {light} and {pastime}.",
            "{P} went fishing from the {bankadj} bank of the {water} {time}.",
            "{P} {rest} on the {side} bank and watched the {bird} (swim past|dive for food|glide by).",
            "The {water} was high after the {harm}, and the water reached the top of the {bankadj} bank.",
            "{P} pulled the {boat} up onto the {bankadj} bank [of the {water}].",
            "From the {side} bank, {he} could see {fish} (jumping|feeding|swimming) in the {water}.",
            "{P} and {F} had a picnic on the {bankadj} bank [under a willow tree] {light}.",
            "The current carried the {boat} slowly toward the {side} bank.",
            "{P} cast a line from the {bankadj} bank and waited for the {fish} to bite.",
            "{growth} grew along the {bankadj} bank of the {water}.",
            "{growth} covered the {side} bank of the {water}.",
            "{P} camped on the {bankadj} bank of the {water} with {gear}.",
            "{P} carried {gear} down to the bank of the {water}.",
            "{P} slipped on the {bankadj} bank and nearly fell into the {water}.",
            "The {side} bank of the {water} was too {bankadj} to climb.",
            "{P} climbed up the {bankadj} bank and looked back at the {water}.",
            "{P} tied the {boat} to a post on the {side} bank.",
            "The {harm} washed away part of the {bankadj} bank.",
            "{P} crossed the {water} by the (stone bridge|old ferry|stepping stones) and climbed the {side} bank.",
            "A pair of {bird} (rested|hid|fed) in the reeds by the {bankadj} bank.",
            "{P} paddled the {boat} along the {water}, close to the {bankadj} bank.",
            "Children played on the {bankadj} bank while {P} {pastime}.",
            "{P} found an old boot half buried in the mud of the bank.",
            "The path followed the bank of the {water} (for miles|to the village|past the mill|into the woods).",
            "The old willow leaned over the {water}, its trunk covered in moss.",
            "{P} sat with {his} back against the trunk of a fallen tree near the {bankadj} bank.",
            "{P} caught a small {fish} and let it go back into the {water}.",
            "The water was cold and clear, and {he} could see stones on the bottom.",
        ),
    ),
    Topic(
        "money",
        senses={"bank": "money", "letter": "mail"},
        slots={
            "amount": (
                "fifty", "a hundred", "two hundred", "five hundred", "a thousand", "twenty", "three hundred",
                "forty", "eighty", "two thousand",
            ),
            "purpose": (
                "a new car", "a small house", "the repairs", "a new shop", "a trip abroad", "school fees",
                "a new roof", "a wedding", "a farm", "a bakery", "a new kitchen", "a holiday", "a used van",
            ),
            "staff": ("clerk", "teller", "manager", "adviser", "cashier", "security guard", "branch manager"),
            "doc": ("passport", "card", "statement", "form", "pay slip", "cheque book", "identity card"),
            "bankadj": (
                "local", "small", "big", "national", "new", "old", "busy", "village", "central", "savings",
            ),
            "street": (
                "the main street", "the high street", "the market square", "station road", "the corner",
                "the harbour road", "the town square", "the shopping centre",
            ),
            "account": (
                "a savings account", "a current account", "a joint account", "a business account",
                "a student account", "an account", "a deposit account",
            ),
            "deposit": ("deposit", "pay in", "put away", "save"),
            "money": ("{his} salary", "the cash", "{his} savings", "the rent money", "a check", "the coins"),
            "place": ("vault", "counter", "cash machine", "front desk", "waiting room", "safe", "lobby"),
            "shut": (
                "for the holiday", "for repairs", "early on fridays", "at four", "at noon on saturdays",
                "after a power cut", "for good",
            ),
            "errand": (
                "get some cash", "pay a bill", "change money", "open {account}", "ask about a loan",
                "order a new card", "close an old account", "pay the rent", "send money abroad",
            ),
        },
        lines=(
            "{P} went to the {bankadj} bank {time} to {deposit} {money}.",
            "{P} went to the bank on {street} to {errand}.",
            "{P} went to the {bankadj} bank to {errand}.",
            "{P} (deposited|paid in|put) {money} at the bank {time}.",
            "The bank (gave|lent|offered) {him} a loan for {purpose}.",
            "The {bankadj} bank approved a loan for {purpose}.",
            "{P} asked the bank on {street} for a loan to pay for {purpose}.",
            "{P} opened {account} at the {bankadj} bank on {street}.",
            "The {staff} at the bank counted the money twice.",
            "The {staff} at the {bankadj} bank helped {him} to {errand}.",
            "{P} withdrew {amount} dollars from the bank {time}.",
            "{P} took {amount} dollars out of the bank for {purpose}.",
            "{P} transferred {amount} dollars from the bank to {his} {relative}.",
            "The bank charged a small fee for every transfer.",
            "{P} waited in line at the bank while the {staff} helped an old man.",
            "The {bankadj} bank raised its interest rate on savings.",
            "{P} forgot {his} {doc} at home, so the bank could not help {him}.",
            "The bank on {street} (closes|was closed|stays closed) {shut}, so {he} hurried across town.",
            "The {bankadj} bank was closed {shut}.",
            "{P} checked {his} balance and saw that the bank had paid the interest.",
            "The {staff} explained how the bank keeps the money safe in the {place}.",
            "{P} met the {staff} of the {bankadj} bank to talk about {purpose}.",
            "{P} waited in the {place} of the bank [for twenty minutes].",
            "The bank on {street} opened a new branch near the station.",
            "{P} borrowed {amount} dollars from the bank to buy {purpose}.",
            "The {staff} at the bank asked {P} to sign the (form|papers|contract|loan agreement).",
            "{P} received a letter from the {bankadj} bank about {his} {doc}.",
            "{P} received a letter from the bank about {account}.",
            "The bank sent {him} a new card and a letter with the code.",
            "{P} paid the bill with a check and kept the receipt.",
            "{P} saved {amount} dollars every month for {purpose}.",
        ),
    ),
    Topic(
        "cricket",
        senses={"bat": "sport", "pitch": "field", "match": "game", "fan": "supporter"},
        slots={
            "team": ("the home team", "the village team", "the school team", "the visitors", "our team"),
            "shot": ("a powerful shot", "a high shot", "a clever shot", "a quick shot"),
            "wood": ("willow", "wooden", "heavy", "new", "old"),
        },
        lines=(
            "{P} picked up the {wood} bat and walked out to the pitch.",
            "{P} swung the bat and hit the ball over the fence.",
            "The cricket match started at ten on a dry, flat pitch.",
            "{P} played {shot} with {his} bat, and the crowd cheered.",
            "The groundsman rolled the pitch before the match began.",
            "{team} won the match by twenty runs.",
            "{P} bought a new bat with a long handle before the match.",
            "Every fan in the stand stood up when {he} hit the ball.",
            "Rain stopped the match, and the players covered the pitch.",
            "{P} held the bat tightly and watched the bowler run in.",
            "The ball bounced on the pitch and struck the edge of the bat.",
            "The fans sang songs for {team} all afternoon.",
            "{P} practised with {his} bat in the nets every evening.",
            "The match was close, and the last ball decided it.",
            "{P} is a loyal fan who never misses a match.",
        ),
    ),
    Topic(
        "cave",
        senses={"bat": "animal"},
        slots={
            "cave": ("cave", "old barn", "tunnel", "attic", "tower"),
            "food": ("insects", "moths", "beetles", "fruit"),
            "size": ("tiny", "small", "brown", "furry", "little"),
        },
        lines=(
            "A {size} bat hung upside down from the roof of the {cave}.",
            "The bat hung upside down in the {cave}.",
            "A bat flew out of the {cave} at (dusk|night|sunset).",
            "At dusk, the bats flew out of the {cave} to hunt for {food}.",
            "{P} saw a bat flutter past the lamp {time}.",
            "The bat used echoes to find {food} in the dark.",
            "{P} read that a bat can eat hundreds of {food} in one night.",
            "Hundreds of bats were sleeping in the {cave} during the day.",
            "A {size} bat flew in through the open window, and {P} gently let it out.",
            "The bat folded its wings and went to sleep.",
            "{P} shone a torch into the {cave} and saw a bat with tiny claws.",
            "Bats sleep during the day and hunt at night.",
            "The guide told {P} not to disturb the bats in the {cave}.",
            "{P} counted the bats as they left the {cave} at sunset.",
            "The bat squeaked and flew off into the night.",
        ),
    ),
    Topic(
        "dog",
        senses={"bark": "dog"},
        slots={
            "dog": ("dog", "puppy", "terrier", "sheepdog", "poodle", "beagle"),
            "dogname": ("Rex", "Bella", "Buddy", "Daisy", "Charlie", "Luna"),
            "stranger": ("the postman", "a stranger", "the neighbour", "a delivery man", "a cat"),
            "loud": ("loud", "sharp", "deep", "happy", "angry", "friendly"),
        },
        lines=(
            "{P} has a {dog} called {dogname}.",
            "The {dog} began to bark at {stranger}.",
            "The {dog} (would|did) not stop barking (at night|all day|at the door).",
            "The {dog} began to bark when {stranger} came to the door.",
            "{dogname} gave a {loud} bark and ran to the gate.",
            "{P} heard the {dog} bark in the garden {time}.",
            "The {dog} wagged its tail and barked at {stranger}.",
            "{P} took {dogname} for a walk in the park.",
            "The {loud} bark of the {dog} woke the whole house.",
            "{P} threw a stick, and the {dog} ran to fetch it.",
            "{dogname} did not bark at all when {F} arrived.",
            "{P} gave the {dog} a bowl of water and some food.",
            "The neighbours complained that the {dog} would bark all night.",
            "{P} taught the {dog} to sit and stay.",
            "Every time the doorbell rang, the {dog} started to bark.",
            "The {dog} barked happily and jumped into the lake.",
        ),
    ),
    Topic(
        "forest",
        senses={"bark": "tree", "trunk": "tree"},
        slots={
            "tree": ("oak", "birch", "pine", "maple", "beech", "cedar"),
            "texture": ("rough", "smooth", "thick", "white", "grey", "peeling", "cracked"),
            "creature": ("beetles", "ants", "a woodpecker", "a squirrel", "moss", "lichen"),
        },
        lines=(
            "{P} touched the {texture} bark of an old {tree} tree.",
            "The {tree} tree had {texture} bark and a wide trunk.",
            "{creature} lived in the cracks of the bark.",
            "{P} walked through the forest {time} and collected leaves.",
            "The bark of the {tree} was {texture} and covered in moss.",
            "Deer had stripped the bark from the young trees.",
            "{P} measured the trunk of the {tree} with a long tape.",
            "The trunk of the {tree} was so wide that {P} and {F} could not reach around it.",
            "A woodpecker tapped on the trunk of a dead tree.",
            "The thick bark protects the tree from fire and insects.",
            "{P} carved {his} initials into the bark, and later felt sorry about it.",
            "Sunlight fell between the trunks of the tall {tree} trees.",
            "{P} found a path through the forest that led to a small lake.",
            "The {tree} trunk was hollow, and a family of owls lived inside.",
        ),
    ),
    Topic(
        "camping",
        senses={"match": "fire"},
        slots={
            "fuel": ("dry twigs", "old newspaper", "pine cones", "small sticks", "dry grass"),
            "meal": ("sausages", "beans", "potatoes", "fish", "corn", "soup"),
            "place": ("the lake", "the mountains", "the woods", "the valley", "the beach"),
        },
        lines=(
            "{P} struck a match and lit the camp fire.",
            "{P} lit a match to see in the dark.",
            "The match went out in the wind, so {he} tried again.",
            "{P} went camping near {place} {time}.",
            "{P} put {fuel} under the logs and lit them with a match.",
            "{P} kept a box of matches in a dry bag.",
            "The matches were wet, and nobody could light the stove.",
            "{P} cooked {meal} over the fire and shared them with {F}.",
            "The small flame of the match lit the candle in the tent.",
            "{P} pitched the tent near {place} before it got dark.",
            "They sat around the fire and told stories until midnight.",
            "{P} had only one match left, so {he} was very careful.",
            "{P} struck the match on the side of the box, and it burst into flame.",
            "In the morning, {P} put out the fire with a bucket of water.",
            "The smoke from the fire smelled of pine.",
        ),
    ),
    Topic(
        "football",
        senses={"match": "game", "pitch": "field", "fan": "supporter"},
        slots={
            "club": ("the city club", "the local team", "the champions", "the visitors", "our club"),
            "score": ("two goals to one", "three goals to nil", "one goal to nil", "four goals to two"),
            "weather": ("muddy", "wet", "frozen", "green", "perfect", "soft"),
        },
        lines=(
            "{P} went to watch the football match with {F} {time}.",
            "The players ran onto the {weather} pitch, and the crowd roared.",
            "{club} won the match by {score}.",
            "{P} scored a goal in the last minute of the match.",
            "The pitch was so {weather} that the ball stopped in the mud.",
            "{P} has been a fan of {club} since {he} was a child.",
            "The fans waved scarves and sang for the whole match.",
            "The referee stopped the match because of the storm.",
            "{P} kicked the ball from the middle of the pitch.",
            "Thousands of fans filled the stadium for the big match.",
            "The coach told {P} to run along the side of the pitch.",
            "After the match, the fans waited outside to meet the players.",
            "{P} wore the shirt of {club} to every match.",
            "The match ended in a draw after a long, hard game.",
        ),
    ),
    Topic(
        "seasons",
        senses={"spring": "season", "plant": "garden"},
        slots={
            "flower": ("tulips", "daffodils", "roses", "daisies", "crocuses", "lilies"),
            "veg": ("beans", "carrots", "tomatoes", "peas", "lettuce", "potatoes"),
            "warm": ("warm", "mild", "sunny", "bright", "rainy", "fresh"),
        },
        lines=(
            "In spring, the days grow longer and the air becomes {warm}.",
            "{P} planted {flower} in the garden in early spring.",
            "Every spring, the {flower} bloom along the garden path.",
            "{P} loves the {warm} mornings of spring.",
            "The birds return in spring and build nests in the hedge.",
            "{P} watered each plant in the garden {time}.",
            "The young plant needed more sunlight, so {he} moved it to the window.",
            "After the long winter, spring arrived with {warm} weather.",
            "{P} sowed {veg} in the spring and picked them in the summer.",
            "Spring is {his} favourite season because of the {flower}.",
            "The snow melted in spring, and green leaves appeared on the trees.",
            "{P} gave {his} {relative} a potted plant for {his} birthday.",
            "Each plant in the greenhouse had a small label with its name.",
            "The lambs were born in spring on the farm next door.",
            "{P} grew {veg} and herbs in the garden behind the house.",
        ),
    ),
    Topic(
        "workshop",
        senses={"spring": "coil", "seal": "closure"},
        slots={
            "thing": ("clock", "mattress", "pen", "door", "toy car", "stapler", "watch"),
            "tool": ("pliers", "a screwdriver", "a hammer", "tweezers", "a wrench"),
            "metal": ("steel", "copper", "metal", "brass"),
        },
        lines=(
            "{P} opened the old {thing} and found a broken spring inside.",
            "The {metal} spring pushed the lid open when {he} pressed the button.",
            "{P} replaced the spring in the {thing} using {tool}.",
            "The spring was wound too tightly and snapped.",
            "{P} bought a small {metal} spring at the hardware store.",
            "Without the spring, the {thing} would not work.",
            "{P} fixed the leaking pipe and put a new rubber seal on the joint.",
            "The seal on the jar was so tight that {he} could not open it.",
            "{P} kept {his} tools in a wooden box in the workshop.",
            "The spring in the mattress squeaked every time {he} sat down.",
            "{P} stretched the spring and let it go, and it bounced back.",
            "The rubber seal on the door kept the cold air out.",
            "{P} tightened the screws with {tool} {time}.",
            "{P} repaired the {thing} and it worked like new.",
        ),
    ),
    Topic(
        "music",
        senses={"pitch": "sound"},
        slots={
            "instrument": ("violin", "piano", "flute", "guitar", "cello", "trumpet"),
            "song": ("a folk song", "a lullaby", "an old hymn", "a new song", "a sad song"),
            "adj": ("high", "low", "perfect", "clear", "steady", "true"),
        },
        lines=(
            "{P} sang {song} with a {adj} pitch.",
            "The choir sang with perfect pitch.",
            "The (singer|soprano|tenor) hit a very high pitch.",
            "The choir practised {time} in the old church.",
            "{P} tuned the {instrument} until the pitch was right.",
            "The teacher played a note so the choir could find the pitch.",
            "{P} has perfect pitch and can name any note {he} hears.",
            "The pitch of the {instrument} was too low, so {he} tightened the string.",
            "{P} played {song} on the {instrument} for {his} {relative}.",
            "The singers listened carefully and matched the pitch of the piano.",
            "A violin can play notes with a very high pitch.",
            "{P} practised the {instrument} for an hour every day.",
            "The audience clapped when the concert ended.",
            "{P} hummed the tune, but the pitch kept going up and down.",
            "The conductor raised his hand, and the orchestra began to play.",
            "{P} sang in the school choir with {F}.",
        ),
    ),
    Topic(
        "construction",
        senses={"crane": "machine"},
        slots={
            "load": ("steel beams", "concrete blocks", "a huge pipe", "wooden crates", "glass panels"),
            "building": ("tower", "bridge", "hospital", "office block", "school", "hotel"),
            "worker": ("builder", "engineer", "driver", "foreman", "welder"),
        },
        lines=(
            "A tall crane lifted {load} to the top of the new {building}.",
            "{P} works as a crane driver on a building site.",
            "The crane swung slowly over the street, carrying {load}.",
            "{P} climbed the ladder into the cab of the crane {time}.",
            "The {worker} waved to the crane driver to lower the load.",
            "Strong wind stopped the crane from working that day.",
            "The workers built the {building} in less than a year.",
            "{P} watched the crane lift {load} from the truck.",
            "The {worker} wore a yellow helmet and heavy boots.",
            "The crane was taller than any building in the town.",
            "{P} and the other workers poured concrete for the floor.",
            "The new {building} opened in the summer, and the crane was taken away.",
            "The {worker} checked the steel cable of the crane before lifting.",
        ),
    ),
    Topic(
        "wetland",
        senses={"crane": "bird", "bank": "river"},
        slots={
            "bird": ("herons", "ducks", "geese", "storks", "swans"),
            "food": ("frogs", "fish", "insects", "seeds", "snails"),
            "colour": ("grey", "white", "tall", "elegant", "graceful"),
        },
        lines=(
            "A {colour} crane stood on one leg in the shallow water.",
            "{P} watched a crane catch {food} in the marsh {time}.",
            "The crane spread its wide wings and flew over the lake.",
            "Every autumn, the cranes fly south in long lines.",
            "{P} saw a pair of cranes dancing on the muddy bank.",
            "The crane has long legs and a long neck.",
            "{P} took photos of the cranes and the {bird} from a wooden hide.",
            "The call of the crane echoed across the wetland.",
            "Cranes build their nests among the reeds near the water.",
            "{P} counted more than fifty cranes resting on the river bank.",
            "The young crane followed its parents through the marsh.",
            "{P} used binoculars to watch the {bird} on the lake.",
        ),
    ),
    Topic(
        "office",
        senses={"mouse": "computer", "fan": "cooling", "letter": "mail"},
        slots={
            "device": ("laptop", "computer", "screen", "printer", "keyboard"),
            "task": ("a report", "an email", "a spreadsheet", "a letter", "a presentation"),
            "colleague": ("boss", "colleague", "manager", "assistant"),
        },
        lines=(
            "{P} clicked the mouse and opened the file.",
            "The mouse stopped working, so {he} changed the battery.",
            "{P} moved the mouse across the desk to wake up the {device}.",
            "{P} wrote {task} for {his} {colleague} {time}.",
            "The {device} was slow, and {P} grew impatient.",
            "{P} bought a wireless mouse and a new keyboard.",
            "The fan inside the {device} was loud and hot.",
            "{P} turned on the desk fan because the office was warm.",
            "{P} double clicked the mouse, but nothing happened.",
            "The {colleague} asked {P} to print {task}.",
            "{P} signed the letter and put it in an envelope.",
            "The office was quiet except for the hum of the fan.",
            "{P} scrolled with the wheel of the mouse to read the page.",
            "{P} saved the file and shut down the {device}.",
        ),
    ),
    Topic(
        "farmhouse",
        senses={"mouse": "animal"},
        slots={
            "food": ("cheese", "bread", "grain", "seeds", "crumbs", "corn"),
            "place": ("kitchen", "barn", "cellar", "pantry", "shed"),
            "cat": ("cat", "old cat", "ginger cat", "kitten"),
        },
        lines=(
            "A small mouse ran across the {place} floor.",
            "The mouse nibbled the {food} that {P} left on the table.",
            "{P} saw a mouse hiding behind the sacks in the {place}.",
            "The {cat} waited for hours outside the mouse hole.",
            "A field mouse made a nest of straw in the {place}.",
            "{P} set a humane trap and caught the mouse {time}.",
            "The mouse had a long tail and tiny pink feet.",
            "The {cat} chased the mouse under the stove.",
            "{P} carried the mouse outside and let it go in the field.",
            "The mouse squeaked and disappeared into a crack in the wall.",
            "{P} fed the chickens and collected the eggs.",
            "The farmer stored the {food} in the {place} for the winter.",
        ),
    ),
    Topic(
        "coast",
        senses={"seal": "animal"},
        slots={
            "shore": ("rocks", "beach", "sandbank", "harbour", "ice"),
            "prey": ("fish", "squid", "crabs", "herring"),
            "colour": ("grey", "spotted", "young", "fat", "sleek"),
        },
        lines=(
            "A {colour} seal lay on the {shore} in the sun.",
            "{P} watched the seals swim near the {shore} {time}.",
            "The seal dived into the cold water to catch {prey}.",
            "A baby seal called for its mother on the {shore}.",
            "{P} took a boat trip to see the seals and the puffins.",
            "The seal raised its head and looked at {P} with big dark eyes.",
            "Seals can hold their breath for a long time under water.",
            "The waves crashed against the {shore} where the seals rested.",
            "{P} walked along the beach and collected shells.",
            "The keeper at the aquarium fed the seal a bucket of {prey}.",
            "The seal clapped its flippers, and the children laughed.",
            "{P} saw a seal swimming in the harbour next to the fishing boats.",
        ),
    ),
    Topic(
        "post",
        senses={"letter": "mail", "seal": "closure"},
        slots={
            "sender": ("grandmother", "old friend", "pen pal", "cousin", "teacher"),
            "item": ("a postcard", "a parcel", "a package", "a birthday card"),
            "place": ("Spain", "Canada", "India", "Japan", "Brazil", "Norway"),
        },
        lines=(
            "{P} wrote a long letter to {his} {sender} in {place}.",
            "The postman delivered a letter and {item} {time}.",
            "{P} sealed the envelope and put a stamp on it.",
            "The letter from {place} took two weeks to arrive.",
            "{P} opened the letter and read it twice.",
            "The wax seal on the old letter was still unbroken.",
            "{P} posted the letter at the post office on the corner.",
            "{P} sent {item} to {his} {sender} for the holidays.",
            "A letter arrived with a stamp from {place}.",
            "{P} kept every letter from {his} {sender} in a box.",
            "The clerk weighed the parcel and sold {P} a stamp.",
            "{P} broke the seal and unfolded the letter.",
        ),
    ),
    Topic(
        "heat",
        senses={"fan": "cooling"},
        slots={
            "room": ("bedroom", "kitchen", "living room", "classroom", "office", "shop"),
            "drink": ("lemonade", "iced tea", "cold water", "juice"),
        },
        lines=(
            "It was very hot, so {P} switched on the fan in the {room}.",
            "The fan turned slowly and moved the warm air around the {room}.",
            "{P} sat in front of the fan with a glass of {drink}.",
            "The ceiling fan made a soft clicking noise.",
            "{P} bought an electric fan because the summer was so hot.",
            "The fan broke in the middle of the heat wave.",
            "{P} held a paper fan and waved it in front of {his} face.",
            "The {room} stayed cool with the windows open and the fan running.",
            "{P} drank {drink} and stayed in the shade {time}.",
            "The heat made everyone tired and slow.",
            "{P} turned the fan to its highest speed.",
        ),
    ),
    Topic(
        "cartrip",
        senses={"trunk": "car"},
        slots={
            "bags": ("suitcases", "bags", "boxes", "tent", "picnic basket", "groceries"),
            "dest": ("the coast", "the mountains", "the city", "the lake", "the farm"),
            "car": ("car", "old car", "red car", "van", "taxi"),
        },
        lines=(
            "{P} packed the {bags} into the trunk of the {car}.",
            "The trunk was full, so {he} put the rest on the back seat.",
            "{P} drove to {dest} with {F} {time}.",
            "{P} opened the trunk and took out the {bags}.",
            "The spare tyre was kept under the floor of the trunk.",
            "{P} closed the trunk and started the engine.",
            "They stopped for petrol on the way to {dest}.",
            "{P} could not close the trunk because of the {bags}.",
            "The {car} broke down, and {P} called for help.",
            "{P} found an old map in the trunk of the {car}.",
            "The road to {dest} was long and winding.",
            "{P} parked the {car} and locked the trunk.",
        ),
    ),
    Topic(
        "school",
        senses={"letter": "alphabet"},
        slots={
            "subject": ("reading", "spelling", "writing", "maths", "art"),
            "kid": ("child", "pupil", "girl", "boy", "student"),
            "firstletter": ("a", "b", "c", "m", "s", "t"),
        },
        lines=(
            "The teacher wrote a capital letter on the board.",
            "Each {kid} learned to write the letter {firstletter} in a neat line.",
            "{P} taught the class the letters of the alphabet.",
            "The word begins with the letter {firstletter}.",
            "{P} helped a young {kid} with {subject} {time}.",
            "There are twenty six letters in the alphabet.",
            "The {kid} traced each letter with a finger.",
            "{P} practised {subject} in the classroom after lunch.",
            "The teacher asked the class to find a word with five letters.",
            "{P} wrote {his} name in large letters on the cover.",
            "The {kid} forgot the last letter of the word.",
            "{P} read a story to the class before the bell rang.",
        ),
    ),
    Topic(
        "factory",
        senses={"plant": "factory"},
        slots={
            "product": ("cars", "steel", "paper", "bottles", "chemicals", "engines", "bread"),
            "role": ("engineer", "worker", "manager", "inspector", "technician"),
        },
        lines=(
            "{P} works as an {role} at the {product} plant outside the town.",
            "The plant produces {product} day and night.",
            "The company built a new power plant near the river.",
            "Hundreds of workers lost their jobs when the plant closed.",
            "{P} inspected the machines at the plant {time}.",
            "The {role} showed the visitors around the plant.",
            "The plant was loud, and the workers wore ear protection.",
            "The plant made {product} for customers all over the country.",
            "{P} started a new shift at the plant at six.",
            "The factory opened a second plant to make more {product}.",
            "Smoke rose from the chimneys of the old plant.",
        ),
    ),
    Topic(
        "kitchen",
        slots={
            "dish": ("soup", "pasta", "a cake", "bread", "a pie", "stew", "pancakes", "curry", "salad"),
            "ingredient": ("onions", "garlic", "flour", "butter", "sugar", "eggs", "tomatoes", "rice", "cheese"),
            "tool": ("knife", "spoon", "pan", "pot", "bowl", "oven"),
        },
        lines=(
            "{P} cooked {dish} for dinner {time}.",
            "{P} chopped the {ingredient} with a sharp knife.",
            "The kitchen smelled of fresh bread and coffee.",
            "{P} mixed the {ingredient} in a large bowl.",
            "{P} baked {dish} for {his} {relative}.",
            "The soup was too hot, so {he} let it cool.",
            "{P} washed the {tool} and put it away.",
            "{P} added a pinch of salt and some {ingredient}.",
            "{P} and {F} ate {dish} at the kitchen table.",
            "{P} put the {dish} in the oven for forty minutes.",
            "The recipe needed two cups of flour and three eggs.",
            "{P} made tea and sat by the window.",
            "{P} forgot to buy {ingredient}, so {he} went back to the shop.",
        ),
    ),
    Topic(
        "market",
        slots={
            "fruit": ("apples", "oranges", "pears", "grapes", "bananas", "plums", "cherries", "lemons"),
            "stall": ("fruit stall", "bakery stall", "fish stall", "flower stall", "cheese stall"),
            "price": ("two dollars", "three dollars", "a dollar", "five dollars"),
        },
        lines=(
            "{P} went to the market {time} to buy {fruit}.",
            "The {stall} was busy with shoppers.",
            "{P} paid {price} for a bag of {fruit}.",
            "The seller gave {P} an extra apple for free.",
            "{P} carried the shopping home in a basket.",
            "The market opens early every saturday.",
            "{P} chose the ripest {fruit} from the {stall}.",
            "{P} met {F} at the market and they had coffee together.",
            "The {fruit} at the market were fresh and sweet.",
            "{P} bought flowers for {his} {relative} at the market.",
            "The market was crowded and noisy.",
        ),
    ),
    Topic(
        "rain",
        slots={
            "gear": ("umbrella", "raincoat", "boots", "hat"),
            "sky": ("grey", "dark", "cloudy", "heavy"),
        },
        lines=(
            "The sky was {sky}, and it started to rain {time}.",
            "{P} took {his} {gear} because the forecast said rain.",
            "The rain fell all day and filled the streets with puddles.",
            "{P} got wet because {he} forgot {his} {gear}.",
            "Thunder rolled over the hills, and lightning lit the {sky} sky.",
            "{P} watched the rain from the window with a cup of tea.",
            "The children jumped in the puddles in their boots.",
            "After the storm, a rainbow appeared over the town.",
            "{P} waited for the rain to stop before going out.",
            "The wind blew {his} {gear} away.",
        ),
    ),
    Topic(
        "train",
        slots={
            "city": ("the capital", "the coast", "the north", "the old town", "the airport"),
            "seat": ("window seat", "corner seat", "seat by the door", "quiet seat"),
        },
        lines=(
            "{P} took the early train to {city} {time}.",
            "The train was late because of the snow.",
            "{P} found a {seat} and read a book.",
            "The conductor checked {his} ticket.",
            "{P} bought a ticket to {city} at the station.",
            "The train stopped at every small station on the way.",
            "{P} missed the train and waited an hour for the next one.",
            "{P} looked out of the window at the fields and farms.",
            "The platform was crowded with travellers.",
            "{P} met {F} at the station in {city}.",
        ),
    ),
)
# fmt: on

AMBIGUOUS_WORDS = tuple(sorted({w for t in TOPICS for w in t.senses}))

# Words that can stand where an ambiguous word stands, in one sense only: "sat on the shore of the river",
# "the lender approved the loan". Without them the word is certain in every context it appears in, so its
# masked prediction is the same one-hot guess in both senses and nothing pushes its vectors apart; with
# them, what *else* could fill the slot depends on the sense, and so does the word's contextual vector.
SENSE_ALTERNATIVES: dict[tuple[str, str], tuple[str, ...]] = {
    ("bank", "river"): ("shore", "edge", "waterside"),
    ("bank", "money"): ("branch", "lender", "office"),
    ("bat", "animal"): ("owl", "moth", "bird"),
    ("bat", "sport"): ("club", "stick", "racket"),
    ("bark", "dog"): ("growl", "howl", "yelp"),
    ("bark", "tree"): ("wood", "surface", "skin"),
    ("match", "fire"): ("lighter", "flame", "spark"),
    ("match", "game"): ("game", "final", "contest"),
    ("spring", "season"): ("summer", "autumn", "april"),
    ("spring", "coil"): ("coil", "gear", "wire"),
    ("pitch", "sound"): ("tone", "note", "key"),
    ("pitch", "field"): ("field", "ground", "grass"),
    ("crane", "bird"): ("heron", "stork", "swan"),
    ("crane", "machine"): ("digger", "hoist", "derrick"),
    ("mouse", "animal"): ("rat", "vole", "hamster"),
    ("mouse", "computer"): ("keyboard", "button", "trackpad"),
    ("seal", "animal"): ("walrus", "otter", "sea lion"),
    ("seal", "closure"): ("lid", "cap", "stamp"),
    ("fan", "cooling"): ("heater", "cooler", "lamp"),
    ("fan", "supporter"): ("supporter", "follower", "spectator"),
    ("trunk", "tree"): ("stem", "base", "bark"),
    ("trunk", "car"): ("boot", "back", "roof"),
    ("letter", "mail"): ("note", "card", "message"),
    ("letter", "alphabet"): ("symbol", "sign", "character"),
    ("plant", "garden"): ("flower", "shrub", "seedling"),
    ("plant", "factory"): ("factory", "mill", "works"),
}
# The ambiguous word itself keeps half of its slots.
_SELF_WEIGHT = 3


class _Expander:
    """Expands the template mini-language with one random generator."""

    def __init__(self, rng: np.random.Generator, slots: dict[str, tuple[str, ...]]) -> None:
        self.rng = rng
        self.slots = slots
        self.filled: list[tuple[str, str]] = []  # (slot, expansion); recording draws nothing from rng

    def choice(self, options: tuple[str, ...] | list[str]) -> str:
        return options[int(self.rng.integers(len(options)))]

    def expand(self, text: str) -> str:
        out, _ = self._sequence(text, 0, end="")
        return out

    def _sequence(self, text: str, i: int, end: str) -> tuple[str, int]:
        """Expand from i up to the closing character(s) in `end`; return (text, index of the stopper)."""
        parts: list[str] = []
        while i < len(text) and text[i] not in end:
            c = text[i]
            if c == "{":
                j = text.index("}", i)
                name = text[i + 1 : j]
                if name not in self.slots:
                    raise KeyError(f"template slot {{{name}}} is not defined")
                value = self.expand(self.choice(self.slots[name]))
                self.filled.append((name, value))
                parts.append(value)
                i = j + 1
            elif c == "(":
                alternatives: list[str] = []
                i += 1
                while True:
                    piece, i = self._sequence(text, i, end="|)")
                    alternatives.append(piece)
                    if text[i] == ")":
                        break
                    i += 1
                parts.append(self.choice(alternatives))
                i += 1
            elif c == "[":
                piece, i = self._sequence(text, i + 1, end="]")
                if self.rng.random() < 0.5:
                    parts.append(piece)
                i += 1
            else:
                parts.append(c)
                i += 1
        return "".join(parts), i


_ARTICLE = re.compile(r"\b([Aa]) (?=[aeiouAEIOU])")
# "an" before a consonant (not "h": "an hour") goes back to "a".
_ARTICLE_AN = re.compile(r"\b([Aa])n (?=[b-df-gj-np-tv-zB-DF-GJ-NP-TV-Z])")
_SPACES = re.compile(r"\s+")
# An optional part left out at the end ("onto the shore [of the {water}].") leaves a space before the stop.
_SPACE_BEFORE_STOP = re.compile(r" (?=[.,;:!?])")


def _tidy(text: str) -> str:
    text = _SPACE_BEFORE_STOP.sub("", _SPACES.sub(" ", text).strip())
    text = _ARTICLE.sub(lambda m: m.group(1) + "n ", text)
    text = _ARTICLE_AN.sub(lambda m: m.group(1) + " ", text)
    return text[:1].upper() + text[1:]


def _alternative_slot(word: str, sense: str) -> str:
    return f"alt_{word}_{sense}"


def _with_alternatives(topic: Topic, template: str) -> str:
    """Turn each lower-case, singular ambiguous word of the topic into a slot of it and its alternatives."""
    for word, sense in topic.senses.items():
        if (word, sense) in SENSE_ALTERNATIVES:
            template = re.sub(rf"(?<![{{#])\b{word}\b", "{" + _alternative_slot(word, sense) + "}", template)
    return template


def _alternative_slots() -> dict[str, tuple[str, ...]]:
    return {
        _alternative_slot(word, sense): (word,) * _SELF_WEIGHT + alternatives
        for (word, sense), alternatives in SENSE_ALTERNATIVES.items()
    }


_ALTERNATIVE_SLOTS = _alternative_slots()


def generate_document(
    rng: np.random.Generator, *, min_sentences: int = 3, max_sentences: int = 7
) -> tuple[str, list[Sentence]]:
    """One scene: a topic, a protagonist, 3..7 of the topic's sentences in a random order, and a third of the
    time one line of what people say (CHAT_LINES) among them, not first."""
    topic = TOPICS[int(rng.integers(len(TOPICS)))]
    female = rng.random() < 0.5
    name = (
        FEMALE_NAMES[int(rng.integers(len(FEMALE_NAMES)))]
        if female
        else MALE_NAMES[int(rng.integers(len(MALE_NAMES)))]
    )
    friend = name
    while friend == name:
        friend = PERSON_NAMES[int(rng.integers(len(PERSON_NAMES)))]
    # One scene in six is told in the first person ("I ... my", "We ... our"), as users often write.
    person = FIRST_PERSON[int(rng.integers(len(FIRST_PERSON)))] if rng.random() < 1 / 6 else None
    count = int(rng.integers(min_sentences, min(max_sentences, len(topic.lines)) + 1))
    templates = [topic.lines[int(line)] for line in rng.choice(len(topic.lines), size=count, replace=False)]
    if rng.random() < CHAT_SHARE:
        templates.insert(int(rng.integers(1, count + 1)), CHAT_LINES[int(rng.integers(len(CHAT_LINES)))])
    sentences: list[Sentence] = []
    named = False  # whether a sentence has mentioned the protagonist yet: a pronoun needs someone to refer to
    for template in templates:
        # A present-tense "-s" template keeps its named protagonist, and the pronouns that refer back to it.
        first = person if person is not None and not _THIRD_PERSON_PRESENT.match(template) else None
        if first is not None:
            subject = first[0]
        elif person is not None or not named or rng.random() < 0.67:
            # Once mentioned, the protagonist is a pronoun a third of the time, so the model sees "he"/"she"
            # agree with an earlier name across the sentence boundary. In a first-person scene the one named
            # line has no earlier "she" to lean on.
            subject = name
        else:
            subject = "She" if female else "He"
        # A line that opens without the protagonist names them where its pronoun would have had no one to
        # refer to ("The bank gave Tom a loan"); "{Name}" (not the name itself) so the roles data tags them.
        unreferred = first is None and not named and not template.startswith("{P}")
        speaker = first[1] if first else "{Name}" if subject == name else subject.lower()
        slots = dict(SHARED_SLOTS)
        slots.update(CHAT_SLOTS)
        slots.update(_ALTERNATIVE_SLOTS)
        slots.update(topic.slots)
        slots.update(
            {
                "P": (subject,),
                "Name": (name,),
                "F": (friend,),
                "s": (speaker,),
                "he": ("{Name}" if unreferred else first[1] if first else "she" if female else "he",),
                "his": ("{Name}'s" if unreferred else first[2] if first else "her" if female else "his",),
                "him": ("{Name}" if unreferred else first[3] if first else "her" if female else "him",),
            }
        )
        template = _with_alternatives(topic, template)
        if first is not None:
            # "I and Kate" is said "Kate and I" (in a "we" scene too: Kate and I are "we").
            template = _FIRST_PERSON_PAIR.sub(r"\1 and I ", template)
        if template.startswith("{P}"):
            template = "{P}" + template[3:].replace("{P}", "{Name}")
        else:
            # A pronoun in object position would need "him"/"her"; the name is always right there.
            template = template.replace("{P}", "{Name}")
        expander = _Expander(rng, slots)
        text = _WE_WAS.sub(r"\1 were", expander.expand(template))
        if rng.random() < 0.5:
            text = _NEGATION.sub(lambda m: _CONTRACTIONS[m.group(1)], text)
        text = _tidy(text)
        words = set(re.findall(r"[a-z]+", text.lower()))
        senses = {w: s for w, s in topic.senses.items() if w in words or w + "s" in words}
        sentences.append(Sentence(text, topic.name, senses, tuple(expander.filled)))
        named = named or any(slot in _PROTAGONIST_SLOTS for slot, _ in expander.filled)
    return topic.name, sentences


def generate_corpus(documents: int, seed: int) -> Iterator[list[Sentence]]:
    """`documents` scenes from a generator seeded with `seed` (same seed, same corpus)."""
    rng = np.random.default_rng(seed)
    for _ in range(documents):
        yield generate_document(rng)[1]


def write_corpus(path: str | Path, documents: int, seed: int) -> tuple[int, int]:
    """Write the corpus file; return (documents, sentences)."""
    check_seed(seed)
    from ..paths import written_whole

    path = Path(path)
    sentences = 0
    with written_whole(path) as handle:
        for doc in generate_corpus(documents, seed):
            handle.write("\n".join(s.text for s in doc) + "\n\n")
            sentences += len(doc)
    log.info("wrote %d documents, %d sentences to %s", documents, sentences, path)
    return documents, sentences


def read_documents(path: str | Path) -> list[list[str]]:
    """Read a corpus file: one sentence per line, documents separated by blank lines."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"no corpus file at {path}") from exc
    except UnicodeDecodeError as exc:
        from ..paths import not_utf8

        raise ValueError(not_utf8(path, exc)) from exc
    documents: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            current.append(line)
        elif current:
            documents.append(current)
            current = []
    if current:
        documents.append(current)
    if not documents:
        raise ValueError(
            f"{path} holds no text: expected one sentence per line, blank lines between documents"
        )
    return documents


def main(argv: list[str] | None = None) -> int:
    from ..paths import out_file, seed_number, stopped_writing

    parser = argparse.ArgumentParser(
        prog="bertscope pretrain make-corpus", description="Write BERTScope's generated pre-training corpus."
    )
    parser.add_argument("--out", required=True, type=out_file, help="text file to write")
    parser.add_argument("--documents", type=int, default=12000, help="number of scenes (default 12000)")
    parser.add_argument("--seed", type=seed_number, default=0, help="generator seed (default 0)")
    args = parser.parse_args(argv)
    if args.documents < 2:
        parser.error("--documents must be at least 2 (next sentence prediction needs two documents)")
    try:
        docs, sentences = write_corpus(args.out, args.documents, args.seed)
    except (KeyboardInterrupt, OSError) as exc:
        return stopped_writing(parser.prog, args.out, exc)
    print(f"wrote {docs} documents, {sentences} sentences to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
