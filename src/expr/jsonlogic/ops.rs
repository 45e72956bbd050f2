//! The operator names of each dialect and the operator kinds a node carries.

/// The operators whose answer is always a boolean, other than the numeric comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Test {
    Eq,
    Ne,
    StrictEq,
    StrictNe,
    Not,
    NotNot,
    In,
}

/// The numeric comparisons (chained over all operands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
}

impl Cmp {
    #[inline]
    pub(super) fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
        }
    }
}

/// The arithmetic operators (folded over all operands).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

impl Arith {
    #[inline]
    pub(super) fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            Arith::Add => a + b,
            Arith::Sub => a - b,
            Arith::Mul => a * b,
            Arith::Div => a / b,
            // f64 `%` is fmod: the result takes the dividend's sign, like JS.
            Arith::Mod => a % b,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Test(Test),
    Cmp(Cmp),
    Arith(Arith),
    And,
    Or,
    Coalesce,
    If,
    // Extended only.
    Cat,
    Substr,
    Merge,
    Max,
    Min,
    Map,
    Filter,
    Reduce,
    All,
    None,
    Some,
    MissingSome,
    Log,
    Join,
}

pub(super) fn dialect_op(name: &str) -> Option<Op> {
    Some(match name {
        "==" => Op::Test(Test::Eq),
        "!=" => Op::Test(Test::Ne),
        "===" => Op::Test(Test::StrictEq),
        "!==" => Op::Test(Test::StrictNe),
        "!" => Op::Test(Test::Not),
        "!!" => Op::Test(Test::NotNot),
        ">" => Op::Cmp(Cmp::Gt),
        ">=" => Op::Cmp(Cmp::Ge),
        "<" => Op::Cmp(Cmp::Lt),
        "<=" => Op::Cmp(Cmp::Le),
        "and" => Op::And,
        "or" => Op::Or,
        "??" => Op::Coalesce,
        "if" | "?:" => Op::If,
        "in" => Op::Test(Test::In),
        "+" => Op::Arith(Arith::Add),
        "-" => Op::Arith(Arith::Sub),
        "*" => Op::Arith(Arith::Mul),
        "/" => Op::Arith(Arith::Div),
        "%" => Op::Arith(Arith::Mod),
        _ => return None,
    })
}

pub(super) fn extended_op(name: &str) -> Option<Op> {
    Some(match name {
        "cat" => Op::Cat,
        "substr" => Op::Substr,
        "merge" => Op::Merge,
        "max" => Op::Max,
        "min" => Op::Min,
        "map" => Op::Map,
        "filter" => Op::Filter,
        "reduce" => Op::Reduce,
        "all" => Op::All,
        "none" => Op::None,
        "some" => Op::Some,
        "missing_some" => Op::MissingSome,
        "log" => Op::Log,
        "join" => Op::Join,
        _ => return None,
    })
}
