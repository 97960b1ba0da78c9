"""A small multilingual recall set, written for MemLikeHuman's tests and bench/multilingual.py.

Each case is a remembered sentence and a question about it asked in other words, in the same
language: a paraphrase that shares one or two content words at most, often in another inflection,
with a particle or article glued on, or inside a compound. The sentences are everyday chat
statements written for this set (not taken from any data set). Every sentence of the set is the
distractor of every other question.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """A remembered sentence and a paraphrased question whose answer it is."""

    language: str
    text: str
    query: str


_SET: dict[str, list[tuple[str, str]]] = {
    "Chinese": [
        ("我女儿下个月要去上海参加钢琴比赛。", "女儿的钢琴比赛在哪个城市？"),
        ("上周我把旧自行车卖给了邻居。", "我的旧自行车卖给谁了？"),
        ("医生说我每天应该少吃糖。", "医生对吃糖有什么建议？"),
        ("我们公司明年打算在成都开新办公室。", "公司的新办公室开在哪里？"),
        ("我最喜欢的菜是妈妈做的红烧肉。", "我最爱吃哪道菜？"),
        ("昨天晚上停电了，我只好点蜡烛看书。", "停电的时候我用什么照明？"),
        ("我的护照下个月就过期了，得赶快去续签。", "护照什么时候到期？"),
        ("弟弟在学习日语，准备去东京留学。", "弟弟打算去哪里留学？"),
    ],
    "Japanese": [
        ("来週の月曜日に歯医者の予約があります。", "歯医者の予約はいつ？"),
        ("息子はサッカー部に入りたがっています。", "息子が入りたい部活は何ですか？"),
        ("先月、京都で古い着物を買いました。", "着物をどこで買いましたか？"),
        ("うちの猫は魚よりも鶏肉が好きです。", "猫の好物は何？"),
        ("毎朝六時に起きてジョギングしています。", "毎朝のジョギングは何時から？"),
        ("新しいパソコンが壊れて、修理に出しました。", "パソコンの修理はどうなった？"),
        ("妻の誕生日に花束を贈るつもりです。", "妻の誕生日プレゼントは何にする？"),
        ("大阪に住んでいる友達が結婚することになりました。", "結婚する友達はどこに住んでいる？"),
    ],
    "Korean": [
        ("다음 주에 부산으로 출장을 가요.", "출장은 어디로 가나요?"),
        ("우리 강아지는 산책을 정말 좋아해요.", "강아지가 제일 좋아하는 것은?"),
        ("어제 친구와 한강에서 자전거를 탔어요.", "자전거는 어디서 탔어요?"),
        ("제 동생은 대학교에서 경제학을 공부해요.", "동생의 전공은 무엇인가요?"),
        ("이번 겨울에 제주도로 가족 여행을 갈 거예요.", "가족 여행은 어디로 가요?"),
        ("감기에 걸려서 회사에 못 갔어요.", "왜 회사에 안 갔어요?"),
        ("새 아파트로 이사한 지 한 달 됐어요.", "언제 이사했어요?"),
        ("아침마다 커피를 두 잔씩 마셔요.", "하루에 커피를 몇 잔 마셔요?"),
    ],
    "German": [
        ("Meine Schwester zieht nächsten Monat nach Hamburg.", "Wohin zieht meine Schwester?"),
        ("Ich habe mir gestern ein neues Fahrrad gekauft.", "Wann war der Fahrradkauf?"),
        ("Unser Sohn spielt seit drei Jahren Geige.", "Welches Instrument lernt der Junge?"),
        ("Der Arzt hat mir Physiotherapie für den Rücken verschrieben.", "Was hilft gegen meine Rückenschmerzen?"),
        ("Am Wochenende gehen wir in den Alpen wandern.", "Wo ist die Wanderung am Wochenende?"),
        ("Mein Zug nach Berlin hatte zwei Stunden Verspätung.", "Wie spät kam der Zug in Berlin an?"),
        ("Ich trinke keinen Kaffee mehr, nur noch Tee.", "Trinke ich noch Kaffee?"),
        ("Die Heizung in meiner Wohnung ist kaputt.", "Was funktioniert in der Wohnung nicht?"),
    ],
    "Russian": [
        ("Мой брат работает программистом в Новосибирске.", "Кем работает брат?"),
        ("В субботу мы ходили в театр на балет.", "Когда мы были в театре?"),
        ("Я начал изучать испанский язык онлайн.", "Какой язык я изучаю?"),
        ("Наша дочь очень боится собак.", "Кого боится дочка?"),
        ("Летом мы поедем отдыхать на Байкал.", "Куда мы едем летом в отпуск?"),
        ("У меня сильная аллергия на орехи.", "На что у меня аллергия?"),
        ("Вчера я потерял ключи от машины.", "Где ключи от моей машины?"),
        ("Бабушка испекла пирог с яблоками.", "Какой пирог испекла бабушка?"),
    ],
    "Arabic": [
        ("سأسافر إلى القاهرة الأسبوع القادم لحضور مؤتمر", "متى أسافر إلى القاهرة؟"),
        ("ابني يحب لعب كرة القدم مع أصدقائه", "ما الرياضة التي يحبها ابني؟"),
        ("اشتريت سيارة جديدة من المعرض أمس", "متى اشتريت السيارة؟"),
        ("زوجتي تعمل طبيبة في المستشفى", "في أي مستشفى تعمل زوجتي؟"),
        ("نسيت مفاتيح البيت في المكتب", "أين نسيت المفاتيح؟"),
        ("أدرس اللغة الفرنسية في المساء", "ما اللغة التي أدرسها؟"),
        ("الطقس في الرياض حار جداً في الصيف", "كيف الجو في الرياض صيفاً؟"),
        ("أختي ستتزوج في شهر مايو", "متى زواج أختي؟"),
    ],
    "Thai": [
        ("พรุ่งนี้ฉันจะไปหาหมอฟันตอนเช้า", "นัดหมอฟันวันไหน"),
        ("แมวของฉันชอบนอนบนโซฟา", "แมวชอบนอนที่ไหน"),
        ("เดือนหน้าพี่ชายจะย้ายไปเชียงใหม่", "พี่ชายย้ายไปอยู่ที่ไหน"),
        ("ฉันแพ้อาหารทะเลโดยเฉพาะกุ้ง", "ฉันแพ้อะไร"),
        ("เมื่อวานรถเสียกลางทาง", "รถเสียเมื่อไหร่"),
        ("ลูกสาวเรียนเปียโนทุกวันเสาร์", "ลูกสาวเรียนดนตรีอะไร"),
        ("เราจะไปเที่ยวภูเก็ตช่วงปีใหม่", "ปีใหม่ไปเที่ยวที่ไหน"),
        ("ฉันดื่มชาเขียวทุกเช้า", "ตอนเช้าดื่มอะไร"),
    ],
}

CASES: tuple[Case, ...] = tuple(
    Case(language, text, query) for language, pairs in _SET.items() for text, query in pairs
)
LANGUAGES: tuple[str, ...] = tuple(_SET)
