//! Node kinds as named constants, so a misspelt kind fails to compile instead of never
//! matching. The values are CPython's `ast` class names, written by `parse::convert`.

/// `def` statement.
pub const FUNCTION_DEF: &str = "FunctionDef";
/// `async def` statement.
pub const ASYNC_FUNCTION_DEF: &str = "AsyncFunctionDef";
/// `class` statement.
pub const CLASS_DEF: &str = "ClassDef";
/// `return` statement.
pub const RETURN: &str = "Return";
/// `del` statement.
pub const DELETE: &str = "Delete";
/// `a = b` statement.
pub const ASSIGN: &str = "Assign";
/// `type X = ...` statement.
pub const TYPE_ALIAS: &str = "TypeAlias";
/// `a += b` statement.
pub const AUG_ASSIGN: &str = "AugAssign";
/// `a: T = b` statement.
pub const ANN_ASSIGN: &str = "AnnAssign";
/// `for` statement.
pub const FOR: &str = "For";
/// `async for` statement.
pub const ASYNC_FOR: &str = "AsyncFor";
/// `while` statement.
pub const WHILE: &str = "While";
/// `if` statement.
pub const IF: &str = "If";
/// `with` statement.
pub const WITH: &str = "With";
/// `async with` statement.
pub const ASYNC_WITH: &str = "AsyncWith";
/// `match` statement.
pub const MATCH: &str = "Match";
/// `raise` statement.
pub const RAISE: &str = "Raise";
/// `try` statement.
pub const TRY: &str = "Try";
/// `try` statement with `except*`.
pub const TRY_STAR: &str = "TryStar";
/// `import` statement.
pub const IMPORT: &str = "Import";
/// `from ... import` statement.
pub const IMPORT_FROM: &str = "ImportFrom";
/// `global` statement.
pub const GLOBAL: &str = "Global";
/// `nonlocal` statement.
pub const NONLOCAL: &str = "Nonlocal";
/// Expression statement.
pub const EXPR: &str = "Expr";
/// `pass` statement.
pub const PASS: &str = "Pass";
/// `break` statement.
pub const BREAK: &str = "Break";
/// `continue` statement.
pub const CONTINUE: &str = "Continue";
/// `a and b`, `a or b`.
pub const BOOL_OP: &str = "BoolOp";
/// `(a := b)`.
pub const NAMED_EXPR: &str = "NamedExpr";
/// Binary operation.
pub const BIN_OP: &str = "BinOp";
/// Unary operation.
pub const UNARY_OP: &str = "UnaryOp";
/// `lambda`.
pub const LAMBDA: &str = "Lambda";
/// `a if t else b`.
pub const IF_EXP: &str = "IfExp";
/// Dict display.
pub const DICT: &str = "Dict";
/// Set display.
pub const SET: &str = "Set";
/// List comprehension.
pub const LIST_COMP: &str = "ListComp";
/// Set comprehension.
pub const SET_COMP: &str = "SetComp";
/// Dict comprehension.
pub const DICT_COMP: &str = "DictComp";
/// Generator expression.
pub const GENERATOR_EXP: &str = "GeneratorExp";
/// `await`.
pub const AWAIT: &str = "Await";
/// `yield`.
pub const YIELD: &str = "Yield";
/// `yield from`.
pub const YIELD_FROM: &str = "YieldFrom";
/// Comparison chain.
pub const COMPARE: &str = "Compare";
/// Call.
pub const CALL: &str = "Call";
/// f-string.
pub const JOINED_STR: &str = "JoinedStr";
/// Constant.
pub const CONSTANT: &str = "Constant";
/// `value.attr`.
pub const ATTRIBUTE: &str = "Attribute";
/// `value[slice]`.
pub const SUBSCRIPT: &str = "Subscript";
/// `*value`.
pub const STARRED: &str = "Starred";
/// A name.
pub const NAME: &str = "Name";
/// List display.
pub const LIST_DISPLAY: &str = "List";
/// Tuple display.
pub const TUPLE: &str = "Tuple";
/// The parameters of a function or lambda.
pub const ARGUMENTS: &str = "arguments";
/// One parameter.
pub const ARG: &str = "arg";
/// One item of a `with`.
pub const WITH_ITEM: &str = "withitem";
/// One `except` clause.
pub const EXCEPT_HANDLER: &str = "ExceptHandler";
/// One `case` of a `match`.
pub const MATCH_CASE: &str = "match_case";
/// A name in a pattern, `global` or handler.
pub const IDENTIFIER: &str = "identifier";
/// One item of a parameter list: an `arg` and its default.
pub const ARG_WITH_DEFAULT: &str = "arg_with_default";
/// One imported name.
pub const ALIAS: &str = "alias";
/// One keyword argument of a call or class.
pub const KEYWORD: &str = "keyword";
/// `case` pattern matching a value.
pub const MATCH_VALUE: &str = "MatchValue";
/// `case` mapping pattern.
pub const MATCH_MAPPING: &str = "MatchMapping";
/// `case` class pattern.
pub const MATCH_CLASS: &str = "MatchClass";
/// The root of a parsed file.
pub const MODULE: &str = "Module";
