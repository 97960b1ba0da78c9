"""Words that carry no need of their own, per language: function words and politeness.

A prompt's match with an archive record must rest on what the prompt is about. In a small archive
every word is rare, so rarity alone cannot tell "please" from "pnpm"; these lists can, in every
language listed. Which lists apply is decided per text (`languages_of`): the languages whose function
words it uses most, so that "die" is a function word in a German prompt and stays a verb in an
English one. Scripts written without spaces (Chinese, Japanese, Korean, Thai) have no word boundaries
to look up: their politeness and function phrases are cut out of the text (`without_phrases`).

The lists are short and plain on purpose: the most frequent closed-class words and the usual
politeness formulas of each language, lower case, accents as written (the callers fold nothing).
"""

from __future__ import annotations

from collections.abc import Iterable

_SPACED = {
    "en": """a about above after again against all also am an and any are aren as at be because been before
        being below between both but by can cannot could couldn did didn do does doesn doing don down during
        each else ever few for from further get got had hadn has hasn have haven having he her here hers herself
        him himself his how however i if in into is isn it its itself just let ll me more most much must mustn
        my myself no nor not now of off on once only or other ought our ours ourselves out over own re s same
        shall shan she should shouldn so some such t than that the their theirs them themselves then there these
        they this those through to too under until up upon us ve very was wasn we were weren what whatever when
        whenever where whereas whether which while who whom whose why will with won would wouldn yet you your
        yours yourself yourselves d m o y
        please pls plz thanks thank thx ty cheers kindly hi hello hey ok okay yes yeah yep sure alright""",
    "de": """der die das den dem des ein eine einer eines einem einen und oder aber doch sondern denn weil dass
        ob wenn als wie wo was wer wen wem warum wieso ich du er sie es wir ihr mich dich sich uns euch mir dir
        ihm ihnen mein dein sein unser euer nicht kein keine ist sind war waren bin bist seid hat habe hast haben
        hatte wird werden wurde kann können muss müssen soll sollen will wollen mit von zu zum zur bei nach aus
        auf für über unter vor hinter neben zwischen durch gegen ohne um an im am ins vom beim auch noch schon
        nur so da hier dort dann jetzt mal bitte danke dankeschön hallo hi ja nein okay gerne""",
    "fr": """le la les un une des du de d l au aux et ou mais donc or ni car que qui quoi dont où je tu il elle
        on nous vous ils elles me te se moi toi lui leur leurs mon ma mes ton ta tes son sa ses notre nos votre
        vos ce cet cette ces est sont suis es sommes êtes était ai as a avons avez ont avait pas ne n plus dans
        sur sous avec sans pour par en chez vers comme si aussi très bien tout tous toute toutes merci svp
        plaît bonjour salut oui non d'accord""",
    "es": """el la los las un una unos unas y o pero que quien qué cual cuál donde dónde cuando como cómo yo tú
        él ella nosotros vosotros ellos ellas me te se nos os le les lo mi mis tu tus su sus nuestro nuestra es
        son soy eres somos está están estoy era fue ha he has han hay no sí del al de en con sin por para sobre
        entre hasta desde muy más también ya gracias favor hola vale""",
    "it": """il lo la i gli le un uno una e o ma che chi cui dove quando come io tu lui lei noi voi loro mi ti
        si ci vi mio mia tuo tua suo sua nostro vostro è sono sei siamo era ha ho hai hanno non di a da in con su
        per tra fra del della dei delle al alla nel nella anche già molto più grazie prego ciao sì""",
    "pt": """o a os as um uma uns umas e ou mas que quem onde quando como eu tu ele ela nós vós eles elas me te
        se nos lhe lhes meu minha teu tua seu sua nosso nossa é são sou está estão era foi tem têm há não sim de
        do da dos das em no na nos nas com sem por para pelo pela muito mais também já obrigado obrigada favor
        olá oi""",
    "nl": """de het een en of maar dat die wie wat waar wanneer hoe ik jij je hij zij wij we jullie mij me mijn
        jouw zijn haar ons onze is ben bent was waren heeft heb hebben wordt worden kan kunnen moet moeten niet
        geen van in op met voor aan bij naar uit door over om ook nog al wel dank bedankt alsjeblieft graag hoi
        hallo ja nee""",
    "sv": """en ett och eller men att som vem vad var när hur jag du han hon vi ni de mig dig oss min din sin
        är var har hade kan ska inte av i på med för till från om också tack hej ja nej snälla""",
    "pl": """i a w z na do od o że to jest są był była nie tak ja ty on ona my wy oni mnie ci się jak co kto
        gdzie kiedy czy dla po przez za proszę dziękuję cześć""",
    "tr": """ve veya ama bir bu şu o ben sen biz siz onlar ne nasıl nerede ne zaman için ile de da mi mı mu mü
        değil var yok lütfen teşekkürler merhaba evet hayır""",
    "ru": """и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было
        вот от меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас нибудь
        опять уж вам ведь там потом себя ничего ей может они тут где есть надо ней для мы тебя их чем была сам
        чтоб без будто чего раз тоже себе под будет ж тогда кто этот того потому этого какой совсем ним здесь
        этом один почти мой тем чтобы нее сейчас были куда зачем всех никогда можно при наконец два об другой
        хоть после над больше тот через эти нас про всего них какая много разве три эту моя впрочем хорошо свою
        этой перед иногда лучше чуть том нельзя такой им более всегда конечно всю между пожалуйста спасибо
        привет здравствуйте""",
    "ar": """في من إلى على عن مع هذا هذه ذلك تلك الذي التي الذين هو هي هم أنا أنت نحن أنتم كان كانت يكون لا لم لن
        ما ماذا متى أين كيف هل أو و ثم لكن إن أن قد كل بعض غير بين عند لو من فضلك شكرا مرحبا نعم""",
}

# Scripts without spaces: phrases cut out of the text, longest first.
_UNSPACED = {
    "zh": "请问 麻烦你 麻烦 谢谢你 谢谢 多谢 你好 您好 好的 一下",  # single characters are parts of words too
    "ja": "お願いします お願い ください ありがとうございます ありがとう こんにちは よろしく です ます",
    "ko": "부탁합니다 부탁해요 감사합니다 고맙습니다 안녕하세요 주세요 해주세요",
    "th": "กรุณา ขอบคุณครับ ขอบคุณค่ะ ขอบคุณ สวัสดี ครับ ค่ะ คะ",
}

WORDS: dict[str, frozenset[str]] = {lang: frozenset(text.split()) for lang, text in _SPACED.items()}
PHRASES: tuple[str, ...] = tuple(sorted({p for t in _UNSPACED.values() for p in t.split()}, key=len, reverse=True))


def languages_of(words: Iterable[str]) -> set[str]:
    """The languages whose function words the words use most (ties: all of them); none when no word is one."""
    counts: dict[str, int] = {}
    for word in words:
        for lang, listed in WORDS.items():
            if word in listed:
                counts[lang] = counts.get(lang, 0) + 1
    best = max(counts.values(), default=0)
    return {lang for lang, count in counts.items() if count == best} if best else set()


def content(words: Iterable[str]) -> list[str]:
    """The words less the function words of the languages they are in (`languages_of`), order kept."""
    found = list(words)
    ignored = frozenset().union(*(WORDS[lang] for lang in languages_of(found)))
    return [w for w in found if w not in ignored]


def without_phrases(text: str) -> str:
    """The text with the politeness and function phrases of unsegmented scripts replaced by spaces."""
    for phrase in PHRASES:
        if phrase in text:
            text = text.replace(phrase, " ")
    return text
