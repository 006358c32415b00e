"""Sensitive topics every owner shares, whatever their policy calls them.

A policy names its own categories and keywords ("wedding: marry, elope"), and a fact often says
the sensitive thing in other words ("Base goes from 92k to 118k" has no "salary" in it). These
lists are the project's own, written once from what people treat as private in any culture the
team could think of (health, money, work changes, love, family events, the law, where someone
lives, secrets): not fitted to any scenario. They serve two purposes:

- a veto: a fact that touches one of these topics is never "mundane", so it never falls to the
  policy's default category on a guess (fail closed);
- a hint: the topic's description is compared with the policy's category profiles to suggest a
  category for the owner to confirm, and to file the fact when the match is unambiguous.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    #: what the topic is about, in words an embedder can match to a category profile.
    description: str
    pattern: re.Pattern[str]
    #: whether the topic names a kind of information a policy category could be about (secrecy
    #: itself is not one: it says how private, not what about).
    maps: bool = True


_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def _words(*stems: str) -> re.Pattern[str]:
    """Word stems, matched at a word start; a trailing ``$`` means the whole word only."""
    parts = [re.escape(s[:-1]) + r"\b" if s.endswith("$") else re.escape(s) + r"\w*" for s in stems]
    return re.compile(r"(?<![\w])(?:" + "|".join(parts) + ")", re.IGNORECASE)


_MONEY_FIGURE = r"[$€£¥₹]\s?\d|\b(?:R|Rs|R\$|KSh|Ksh|N|₦|GH₵|zł|kr)\s?\d[\d,.]*\b|\b\d{1,3}(?:,\d{3})+\b|\d[\d,.]*\s?(?:k|m|bn|grand|usd|eur|gbp|sek|nok|dkk|chf|inr|aud|cad)\b|\b\d{2,3}[,.]\d{3}\b"

TOPICS: tuple[Topic, ...] = (
    Topic("health", "health, illness, diagnosis, doctor, hospital, treatment, therapy, medication, pregnancy",
          _words("diagnos", "doctor", "dr$", "gp$", "hospital", "surgery", "surgeon", "therap", "psychiatr",
                 "psycholog", "counsell", "counsel", "cancer", "tumou", "tumor", "chemo", "biopsy", "scan$",
                 "mri$", "medica", "meds$", "prescri", "pill", "depress", "anxiety", "panic attack", "adhd",
                 "autis", "bipolar", "hypertension", "blood pressure", "diabet", "asthma", "allerg", "injur",
                 "fractur", "sick", "illness", "ill$", "symptom", "clinic", "rehab", "addict", "sober",
                 "relapse", "pregnan", "miscarr", "ivf", "fertility", "infertil", "mental health", "burnout",
                 "burn-out", "disorder", "syndrome", "disease", "infection", "virus", "covid", "hiv",
                 "std$", "cardio", "heart", "stroke", "seizure", "epilep", "dementia", "alzheim",
                 "parkinson", "physio", "operation", "recovering from", "condition$", "lump", "migraine",
                 "insomnia", "eating disorder", "anorex", "bulimi", "pain", "chronic", "terminal",
                 "hospice", "dentist", "medical", "health", "appointment", "faint", "passed out", "collaps",
                 "dehydrat", "pre-op", "post-op", "knee replacement", "hip replacement", "stitches", "x-ray",
                 "ultrasound", "blood test", "test results", "icu$", "a&e$", "ambulance", "paramedic",
                 "concussion", "fever", "vomit", "throwing up", "antibiotic", "hearing aid", "deaf",
                 "wheelchair", "crutches", "hormone", "hrt$", "menopaus",
                 "contracepti", "abortion", "sobriety", "aa meeting", "overdose", "suicid", "self-harm",
                 "weeks pregnant", "trimester", "midwife", "ob-gyn", "obgyn")),
    Topic("money", "money, finances, salary, income, debt, loans, savings, rent, costs, prices",
          re.compile(_MONEY_FIGURE + "|" + _words(
              "salary", "salaries", "pay rise", "payrise", "paycheck", "payslip", "wage", "income",
              "bonus", "raise$", "debt", "loan", "mortgage", "rent$", "savings", "saving up", "budget",
              "invest", "owe", "owed", "bank", "overdraft", "credit card", "inheritance", "inherit",
              "afford", "bankrupt", "broke$", "tax$", "taxes$", "taxed$", "tax return", "pension", "equity", "stock option", "shares",
              "valuation", "runway", "burn rate", "price", "cost", "fee$", "fees$", "money", "finance",
              "financial", "pay off", "paid off", "deposit", "compensation", "severance", "base pay",
              "base salary", "payout", "per year", "a year", "per month", "grand$").pattern, re.IGNORECASE)),
    Topic("career", "job, career, job offer, interview, resigning, quitting, promotion, being fired or laid off",
          _words("job offer", "offer letter", "new job", "job$", "jobs$", "interview", "resign", "quit",
                 "quitting", "fired", "laid off", "layoff", "redundan", "promot", "recruit", "headhunt",
                 "notice period", "hand in my notice", "handing in", "leaving the company", "career",
                 "new role", "accepted a", "accepted the", "contract", "hired", "hiring", "demot",
                 "performance review", "performance plan", "pip$", "sabbatical", "retir", "startup",
                 "start-up", "founding", "co-found", "side project", "side hustle", "poach")),
    Topic("education", "school grades, exam results, failing a class, suspensions, student records",
          _words("gpa$", "grades", "failed the", "failed my", "failed his", "failed her", "exam results",
                 "transcript", "report card", "suspended", "suspension", "expelled", "ineligib", "academic probation",
                 "detention", "dropped out", "drop out", "dropping out", "resit", "re-sit", "repeat the year",
                 "held back", "plagiar", "cheating on", "misconduct", "disciplinary")),
    Topic("romance", "love life, dating, relationships, breakups, divorce, affairs, engagement, marriage",
          _words("dating", "date$", "dated", "boyfriend", "girlfriend", "partner", "crush", "divorc",
                 "separat", "affair", "cheat", "break up", "broke up", "breakup", "split up", "engaged",
                 "engagement", "propos", "marry", "marri", "wedding", "elope", "fianc", "ex$", "in love",
                 "hook up", "hooked up", "tinder", "hinge$", "bumble", "sleeping with", "seeing someone",
                 "seeing a", "relationship", "honeymoon")),
    Topic("family", "family events, children, pregnancy, adoption, parents, relatives, deaths and funerals",
          _words("pregnan", "baby", "babies", "due in", "due date", "adopt", "custody", "funeral",
                 "passed away", "died", "death", "dying", "grief", "mum$", "mom$", "dad$", "mother",
                 "father", "parent", "sister", "brother", "sibling", "grandm", "grandf", "grandpa",
                 "grandma", "aunt", "uncle", "cousin", "son$", "daughter", "kids", "child", "in-law",
                 "family")),
    Topic("legal", "legal trouble, lawyers, court, police, visas and immigration status",
          _words("lawyer", "attorney", "solicitor", "court", "lawsuit", "sue$", "suing", "sued", "police",
                 "arrest", "charged", "convict", "prison", "jail", "probation", "visa", "immigra",
                 "deport", "asylum", "residence permit", "green card", "citizenship", "criminal",
                 "settlement", "nda$", "tribunal", "legal")),
    Topic("identity", "home address, phone numbers, passwords, PINs, codes and account numbers",
          re.compile(r"\b(?!(?:19|20)\d\d\b)\d{4,}\b|" + _words(
              "password", "passcode", "passphrase", "pin$", "pin code", "login", "api key", "token",
              "secret key", "account number", "iban", "sort code", "social security", "ssn$", "passport",
              "address", "lives at", "postcode", "zip code", "phone number", "door code", "alarm code",
              "safe code", "combination").pattern, re.IGNORECASE)),
    Topic("secrets", "secrets, confidences, surprises and things kept from people",
          _words("secret", "confidential", "in confidence", "surprise", "nobody knows", "no one knows",
                 "don't tell", "dont tell", "do not tell", "between us", "between you and me",
                 "off the record", "hush", "hide", "hiding", "lie$", "lied", "lying",
                 "cover story", "pretend", "keep it quiet", "keep quiet", "under wraps", "embarrass",
                 "ashamed", "shame"), maps=False),
    Topic("beliefs", "religion, politics, sexuality, gender identity",
          _words("religio", "church", "mosque", "synagogue", "temple", "pray", "faith", "convert",
                 "atheis", "politic", "vote", "voting", "election", "gay$", "lesbian", "bisexual", "queer",
                 "trans$", "transgender", "coming out", "came out", "sexuality", "lgbt")),
)


#: topics private enough that a policy keyword of a category not about them does not settle a
#: fact that touches them (family words and beliefs are too common in everyday talk for that).
VETO_TOPICS = frozenset({"health", "money", "career", "romance", "legal", "identity", "education"})


#: the same topics in Chinese words, found anywhere in a sentence (Chinese sets no spaces).
TOPICS_ZH: dict[str, re.Pattern[str]] = {name: re.compile("|".join(words)) for name, words in {
    "health": ("医院", "医生", "看病", "诊断", "确诊", "抑郁", "焦虑", "失眠", "心理咨询", "心理医生", "吃药", "手术", "住院",
               "癌", "肿瘤", "化疗", "怀孕", "流产", "痛风", "高血压", "糖尿病", "复查", "体检", "病", "尿酸", "药"),
    "money": ("工资", "薪水", "薪资", "年薪", "月薪", "收入", "存款", "贷款", "借钱", "欠钱", "欠债", "房贷", "车贷", "经营贷",
              "补助", "奖金", "房租", "租金", "亏", "罚款", "罚咗", "万块", "块钱", "花呗"),
    "career": ("辞职", "离职", "跳槽", "裁员", "裁掉", "被炒", "开除", "面试", "offer", "升职", "降职", "转岗", "退学", "转硕",
               "找工作", "结业", "倒闭", "执笠"),
    "education": ("挂科", "成绩", "分数", "处分", "休学", "延毕", "高考", "考研"),
    "romance": ("恋爱", "拍拖", "男朋友", "女朋友", "表白", "分手", "离婚", "出轨", "结婚", "订婚", "相亲"),
    "family": ("怀孕", "生孩子", "去世", "葬礼", "大寿"),
    "legal": ("律师", "官司", "起诉", "警察", "派出所", "签证", "坐牢"),
    "identity": ("密码", "账号", "验证码", "身份证", "银行卡", "住址", "门牌"),
    "secrets": ("秘密", "保密", "你知我知", "惊喜", "偷偷", "瞒着"),
}.items()}


@lru_cache(maxsize=8192)
def sensitive_topics(text: str) -> tuple[tuple[str, str], ...]:
    """(topic, matched words) for every sensitive topic the text touches (in English words, or
    in Chinese ones where the text has Chinese: :data:`TOPICS_ZH`)."""
    out: list[tuple[str, str]] = []
    chinese = _HAN.search(text) is not None
    for topic in TOPICS:
        m = topic.pattern.search(text)
        if m is None and chinese and topic.name in TOPICS_ZH:
            m = TOPICS_ZH[topic.name].search(text)
        if m:
            out.append((topic.name, m.group(0).strip()))
    return tuple(out)


#: a password-like token (letters, digits and a symbol) or "user / secret" written out.
_CREDENTIAL = re.compile(
    r"(?<!\S)(?![A-Z]{0,3}[$€£¥]\d)(?=[^\s]*[A-Za-z])(?=[^\s]*\d)(?=[^\s]*[!@#$%^&*?~+=|])[^\s,;]{7,}(?=[,;.!?)]*(?:\s|$))"
    r"|\b[\w.-]{3,}\s*/\s*(?=[^\s]*\d)[^\s]{6,}",
)


def credential_shaped(text: str) -> bool:
    """Whether the text holds something shaped like a password or a login pair."""
    return bool(_CREDENTIAL.search(text)) and not re.search(r"https?://", text)
