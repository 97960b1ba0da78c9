"""A labelled set for memory_forget's ``still_said_by``: which other records state a forgotten text.

Written by hand for this purpose (original text, no data set copied or paraphrased), from the kind
of chat a memory server records: a user's note, the assistant's reply that restates it, a memory the
agent gave, and turns nearby that share a word or two with it and say something else. Each group is
one forgotten text and the other records of its scope; each record is labelled ``named`` when a
reader would say it states (part of) what the forgotten text said, so that forgetting the text and
keeping it would leave what was forgotten readable. A record that only shares a common word ("moved",
"March", "Noted", "stay safe") is not.

The groups are split in two: ``TUNE`` (odd groups) chose the rule, ``HELD_OUT`` (even groups) reports
it. ``python -m bench.still_said`` runs both.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Other:
    text: str
    named: bool
    role: str = "assistant"  # an event's role, or "memory": a memory the agent gave (on another turn)


@dataclass(frozen=True)
class Group:
    number: int
    forgotten: str
    others: tuple[Other, ...]
    role: str = "user"


def _g(number: int, forgotten: str, *others: Other, role: str = "user") -> Group:
    return Group(number, forgotten, others, role)


def yes(text: str, role: str = "assistant") -> Other:
    return Other(text, True, role)


def no(text: str, role: str = "user") -> Other:
    return Other(text, False, role)


GROUPS = (
    _g(
        1,
        "My sister Anna moved to Berlin in March",
        yes("Got it: your sister Anna now lives in Berlin."),
        yes("User's sister Anna lives in Berlin", "memory"),
        yes("Noted: Anna lives in Berlin now"),
        yes("Anna in Berlin, that's exciting! Is she enjoying the new city?"),
        no("We moved the standup to Thursday"),
        no("I'm starting piano lessons in March"),
        no("Noted.", "assistant"),
        no("Noted, I'll remember that.", "assistant"),
        no("We moved the standup to March"),
        no("My sister is visiting in March"),
        no("Anna from accounting sent the invoice"),
        no("The Berlin office closes early on Fridays"),
    ),
    _g(
        2,
        "Note: staging is staging.example.internal:8443",
        yes("Noted: staging is staging.example.internal:8443"),
        yes("The staging server is staging.example.internal:8443", "memory"),
        no("Lunch is at noon in the staging area of the canteen, as every day."),
        no("The staging build 3 passed."),
    ),
    _g(
        3,
        "my wifi password is tulip-9921, don't share it",
        yes("Got it, the wifi password is tulip-9921."),
        yes("User's wifi password is tulip-9921", "memory"),
        no("Can you share the slides after the meeting?"),
        no("The wifi in the office is slow again"),
    ),
    _g(
        4,
        "I'm allergic to penicillin, it gave me a rash as a kid",
        yes("Understood: you're allergic to penicillin. I'll keep that in mind for the medication list."),
        yes("User is allergic to penicillin", "memory"),
        no("The rash on my arm is gone now"),
        no("My kid has a cold"),
    ),
    _g(
        5,
        "We're naming the dog Biscuit, he's a beagle puppy",
        yes("Biscuit is a great name for a beagle!"),
        yes("User's dog is a beagle puppy named Biscuit", "memory"),
        yes("How is Biscuit settling in? Beagle puppies are a handful."),
        no("I had a biscuit with my tea"),
        no("The puppy class starts Saturday"),
    ),
    _g(
        6,
        "Dentist appointment moved to Tuesday 14 May at 9:30",
        yes("Okay, your dentist appointment is now on Tuesday 14 May at 9:30."),
        yes("User's dentist appointment is on 14 May at 9:30", "memory"),
        no("We moved the standup to Tuesday"),
        no("My appointment with the bank is on Friday"),
    ),
    _g(
        7,
        "I quit my job at Deloitte last week to start my own bakery",
        yes("Congratulations on leaving Deloitte and opening your bakery!"),
        yes("User left Deloitte to start a bakery", "memory"),
        no("Last week was exhausting"),
        no("What's the best flour for a sourdough starter?"),
        no("I need to start my tax return this week"),
    ),
    _g(
        8,
        "Here is the plan: run the migration on Saturday night, keep the old cluster read-only until Monday,"
        " then switch DNS to db2.prod.example.com.",
        yes("So DNS goes to db2.prod.example.com after the migration, right?", "user"),
        yes("The database migration runs Saturday night; DNS then switches to db2.prod.example.com", "memory"),
        yes("Switching DNS to db2.prod.example.com on Monday sounds fine", "user"),
        no("Saturday night I'm going out for dinner"),
        no("Keep the plan simple please"),
        no("Monday is a holiday here"),
        role="assistant",
    ),
    _g(
        9,
        "Mi hermana Lucía vive en Sevilla desde enero",
        yes("Entendido: tu hermana Lucía vive en Sevilla."),
        yes("La hermana del usuario, Lucía, vive en Sevilla", "memory"),
        no("En enero empiezo el gimnasio"),
        no("Vive y deja vivir"),
    ),
    _g(
        10,
        "我的妹妹王芳搬到了奥斯陆",
        yes("好的，你的妹妹王芳现在住在奥斯陆。"),
        yes("用户的妹妹王芳住在奥斯陆", "memory"),
        no("我们把站会搬到了周四"),
        no("我的妹妹喜欢弹钢琴"),
    ),
    _g(
        11,
        "Remember that I'm vegetarian, no fish either",
        yes("Noted, you're vegetarian and don't eat fish."),
        yes("User is vegetarian and does not eat fish", "memory"),
        no("I'll remember to bring the charger"),
        no("Fish tacos tonight?"),
    ),
    _g(
        12,
        "Noted: Anna lives in Berlin now",
        yes("My sister Anna moved to Berlin in March", "user"),
        no("Noted.", "assistant"),
        no("Noted, I'll remember that.", "assistant"),
        no("Noted, the meeting is at 3", "assistant"),
        role="assistant",
    ),
    _g(
        13,
        "The gym is closed on Sunday",
        yes("Got it, the gym is closed Sundays."),
        yes("The gym is closed on Sundays", "memory"),
        no("I went to the gym today"),
        no("Sunday lunch at my parents'"),
    ),
    _g(
        14,
        "My son Leo has a peanut allergy",
        yes("I'll remember Leo's peanut allergy when suggesting recipes."),
        yes("User's son Leo is allergic to peanuts", "memory"),
        no("Leo is playing football on Saturday"),
        no("Peanut butter is on the shopping list"),
    ),
    _g(
        15,
        "Long day. Had the performance review with Karen this morning, she said I'm getting promoted to senior"
        " engineer in July, and the raise is 12%. Then picked up the kids, made pasta, and collapsed on the couch.",
        yes("Congrats on the promotion to senior engineer! A 12% raise in July is great news."),
        yes("User is being promoted to senior engineer in July with a 12% raise", "memory"),
        no("Pasta again tonight?"),
        no("Picked up the kids from school"),
        no("Karen wants the report by Friday"),
    ),
    _g(
        16,
        "Wow, that's awesome! Love the colors, you're so talented.",
        no("Wow, that's awesome news about the job!"),
        no("Love the colors in this sunset, so calming"),
        no("Thanks! You're so kind, I love painting"),
    ),
    _g(
        17,
        "Thanks, Gina! Your help means a lot. See you at the event!",
        no("Thanks, Jon! Your support means a lot."),
        no("See you at the event tomorrow!"),
        no("Your help with the move means a lot"),
    ),
    _g(
        18,
        "Hey! Long time no talk. I just got back from a hiking trip in the Dolomites with my brother Marco.",
        yes("Welcome back! How was the Dolomites hike with Marco?"),
        yes("User went hiking in the Dolomites with their brother Marco", "memory"),
        yes("So you and Marco did the Dolomites trip after all!", "user"),
        no("Long time no see! How have you been?"),
        no("I'm planning a hiking trip next month"),
        no("My brother just got a new job"),
    ),
)
TUNE = tuple(group for group in GROUPS if group.number % 2)
HELD_OUT = tuple(group for group in GROUPS if not group.number % 2)
