//! One test per view: a snippet is parsed and each field checked.
use crate::parse::parse_snippet;
use crate::syntax::Node;

fn one(text: &str) -> Node {
    let mut body = parse_snippet("t.py", text).expect("valid snippet");
    assert_eq!(body.len(), 1, "{text}");
    body.remove(0)
}

fn expr(text: &str) -> Node {
    one(text).as_expr_stmt().expect("expression statement").clone()
}

fn name(node: &Node) -> &str {
    node.as_name().expect("a name")
}

#[test]
fn function_def_fields() {
    let node = one("@d\nasync def f(a, b=1) -> int:\n    pass\n    return a\n");
    let f = node.as_function_def().expect("def");
    assert_eq!(f.name, "f");
    assert!(f.is_async);
    assert_eq!(f.decorators.len(), 1);
    assert_eq!(name(&f.decorators[0]), "d");
    assert_eq!(f.args.kind(), "arguments");
    assert_eq!(name(f.returns.expect("annotated")), "int");
    assert_eq!(f.body.children().len(), 2);
    let plain = one("def g(): pass\n");
    let g = plain.as_function_def().expect("def");
    assert!(!g.is_async && g.returns.is_none() && g.decorators.is_empty());
    assert!(plain.as_class_def().is_none());
}

#[test]
fn class_def_fields() {
    let node = one("@dec\nclass C(A, B, metaclass=M):\n    x = 1\n");
    let c = node.as_class_def().expect("class");
    assert_eq!(c.name, "C");
    assert_eq!(c.decorators.len(), 1);
    assert_eq!(c.bases.iter().map(name).collect::<Vec<_>>(), ["A", "B"]);
    assert_eq!(c.keywords.len(), 1);
    assert_eq!(c.keywords[0].as_keyword().expect("keyword").arg, Some("metaclass"));
    assert_eq!(c.body.children().len(), 1);
    assert!(node.as_function_def().is_none());
}

#[test]
fn return_value_is_optional() {
    let node = one("return x\n");
    assert_eq!(node.as_return().expect("return").map(name), Some("x"));
    assert_eq!(one("return\n").as_return().expect("return").map(name), None);
    assert!(one("x\n").as_return().is_none());
}

#[test]
fn assignments() {
    let node = one("a = b = c\n");
    let assign = node.as_assign().expect("assign");
    assert_eq!(assign.targets.iter().map(name).collect::<Vec<_>>(), ["a", "b"]);
    assert_eq!(name(assign.value), "c");

    let node = one("a: int = 1\n");
    let ann = node.as_ann_assign().expect("annotated");
    assert_eq!(name(ann.target), "a");
    assert_eq!(name(ann.annotation), "int");
    assert_eq!(ann.value.and_then(Node::label), Some("int:1"));
    assert!(one("a: int\n").as_ann_assign().expect("annotated").value.is_none());

    let node = one("a += b\n");
    let aug = node.as_aug_assign().expect("augmented");
    assert_eq!((name(aug.target), name(aug.value)), ("a", "b"));
    assert!(node.as_assign().is_none());
}

#[test]
fn conditionals_and_loops() {
    let node = one("if t:\n    a\nelse:\n    b\n    c\n");
    let cond = node.as_conditional().expect("if");
    assert_eq!(name(cond.test), "t");
    assert_eq!((cond.body.children().len(), cond.orelse.children().len()), (1, 2));
    let node = one("while w:\n    a\n");
    assert_eq!(name(node.as_conditional().expect("while").test), "w");
    let node = one("for i in xs:\n    a\nelse:\n    b\n");
    let f = node.as_for().expect("for");
    assert_eq!((name(f.target), name(f.iter)), ("i", "xs"));
    assert_eq!((f.body.children().len(), f.orelse.children().len()), (1, 1));
}

#[test]
fn with_fields() {
    let node = one("async with a as b, c:\n    x\n");
    let with = node.as_with().expect("with");
    assert_eq!(with.body.children().len(), 1);
    let items: Vec<_> = with.items.iter().map(|i| i.as_with_item().expect("item")).collect();
    assert_eq!((name(items[0].context), items[0].vars.map(name)), ("a", Some("b")));
    assert_eq!((name(items[1].context), items[1].vars.map(name)), ("c", None));
    assert!(node.as_conditional().is_none());
}

#[test]
fn try_and_handlers() {
    let node = one("try:\n    a\nexcept E as e:\n    b\nexcept:\n    c\nelse:\n    d\nfinally:\n    f\n");
    let t = node.as_try().expect("try");
    assert_eq!(t.body.children().len(), 1);
    assert_eq!((t.orelse.children().len(), t.finalbody.children().len()), (1, 1));
    let h: Vec<_> = t
        .handlers
        .iter()
        .map(|h| h.as_except_handler().expect("handler"))
        .collect();
    assert_eq!((h[0].type_.map(name), h[0].name), (Some("E"), Some("e")));
    assert_eq!((h[1].type_.map(name), h[1].name), (None, None));
    assert_eq!(h[1].body.children().len(), 1);
}

#[test]
fn match_cases() {
    let node = one("match s:\n    case 1 if g:\n        a\n    case _:\n        b\n");
    let (subject, cases) = node.as_match().expect("match");
    assert_eq!(name(subject), "s");
    let first = cases[0].as_match_case().expect("case");
    assert_eq!(first.pattern.kind(), "MatchValue");
    assert_eq!(first.guard.map(name), Some("g"));
    assert_eq!(first.body.children().len(), 1);
    assert!(cases[1].as_match_case().expect("case").guard.is_none());
}

#[test]
fn lists_of_names_and_targets() {
    let names = |n: &Node| {
        n.items()
            .expect("items")
            .iter()
            .map(|a| a.label().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&one("import a.b, c\n")), ["a.b", "c"]);
    assert_eq!(names(&one("from m import x\n")), ["x"]);
    let node = one("import a.b as c, d\n");
    let aliases = node.items().expect("import");
    assert_eq!((aliases[0].asname(), aliases[1].asname()), (Some("c"), None));
    assert_eq!(names(&one("global g, h\n")), ["g", "h"]);
    assert_eq!(one("del a, b\n").items().expect("del").len(), 2);
    let node = one("type T[X] = list[X]\n");
    let (alias, params, value) = node.as_type_alias().expect("type alias");
    assert_eq!((name(alias), params.len(), value.kind()), ("T", 1, "Subscript"));
}

#[test]
fn parameters_and_lambdas() {
    let node = one("def f(a, /, b: int = 1, *c, d, **e): pass\n");
    let params = node
        .as_function_def()
        .expect("def")
        .args
        .parameters()
        .expect("arguments");
    let names: Vec<_> = params.iter().map(|(arg, _)| arg.label().unwrap_or_default()).collect();
    assert_eq!(names, ["a", "b", "c", "d", "e"]);
    assert_eq!(params[1].1.and_then(Node::label), Some("int:1"));
    assert_eq!(params[1].0.annotation().map(name), Some("int"));
    assert!(params[0].1.is_none() && params[0].0.annotation().is_none());
    let args = node.as_function_def().expect("def").args;
    let positional = args.positional_parameters().expect("arguments");
    assert_eq!(
        positional
            .iter()
            .map(|a| a.label().unwrap_or_default())
            .collect::<Vec<_>>(),
        ["a", "b"]
    );
    let lists = args.children();
    let (arg, default) = lists[1].children()[0].as_arg_with_default().expect("parameter");
    assert_eq!((arg.label(), default.and_then(Node::label)), (Some("b"), Some("int:1")));
    let node = expr("lambda x: x\n");
    let (args, body) = node.as_lambda().expect("lambda");
    assert_eq!(args.parameters().expect("arguments").len(), 1);
    assert_eq!(name(body), "x");
    let node = expr("(y := z)\n");
    let (target, value) = node.as_named_expr().expect("walrus");
    assert_eq!((name(target), name(value)), ("y", "z"));
}

#[test]
fn conditional_and_boolean_expressions() {
    let node = expr("a if t else b\n");
    let branches = node.if_exp_branches().expect("if expression");
    assert_eq!(branches.into_iter().map(name).collect::<Vec<_>>(), ["a", "b"]);
    let node = expr("a or b or c\n");
    let values = node.bool_op_values().expect("or");
    assert_eq!(values.iter().map(name).collect::<Vec<_>>(), ["a", "b", "c"]);
    assert!(node.if_exp_branches().is_none());
    let node = expr("a | b\n");
    let operands = node.bin_op_operands().expect("binary operation");
    assert_eq!(operands.into_iter().map(name).collect::<Vec<_>>(), ["a", "b"]);
}

#[test]
fn comprehensions() {
    let node = expr("{k: v async for k in a if c for v in b}\n");
    let (elements, generators) = node.as_comprehension().expect("dict comprehension");
    assert_eq!(elements.iter().map(name).collect::<Vec<_>>(), ["k", "v"]);
    assert_eq!(generators.len(), 2);
    assert!(generators[0].is_async && !generators[1].is_async);
    assert_eq!((name(generators[0].target), name(generators[0].iter)), ("k", "a"));
    assert_eq!(generators[0].ifs.len(), 1);
    assert_eq!(expr("[x for x in y]\n").as_comprehension().expect("list").0.len(), 1);
}

#[test]
fn call_fields() {
    let node = expr("f(a, *b, k=1, **m)\n");
    let call = node.as_call().expect("call");
    assert_eq!(name(call.func), "f");
    assert_eq!(call.args.len(), 2);
    assert_eq!(name(&call.args[0]), "a");
    assert_eq!(name(call.args[1].operand().expect("starred")), "b");
    let keywords: Vec<_> = call.keywords.iter().map(|k| k.as_keyword().expect("keyword")).collect();
    assert_eq!(keywords[0].arg, Some("k"));
    assert_eq!(keywords[0].value.label(), Some("int:1"));
    assert_eq!((keywords[1].arg, name(keywords[1].value)), (None, "m"));
    assert!(node.as_attribute().is_none());
}

#[test]
fn attribute_and_subscript() {
    let node = expr("self.x\n");
    let attr = node.as_attribute().expect("attribute");
    assert_eq!((name(attr.value), attr.attr), ("self", "x"));
    let node = expr("a[i]\n");
    let sub = node.as_subscript().expect("subscript");
    assert_eq!((name(sub.value), name(sub.slice)), ("a", "i"));
}

#[test]
fn operands_and_elements() {
    assert_eq!(name(expr("await x\n").operand().expect("await")), "x");
    assert!(expr("(yield)\n").operand().is_none());
    assert_eq!(name(expr("(yield from g)\n").operand().expect("yield from")), "g");
    for text in ["(a, b)\n", "[a, b]\n", "{a, b}\n"] {
        let node = expr(text);
        let items = node.elements().expect("display");
        assert_eq!(items.iter().map(name).collect::<Vec<_>>(), ["a", "b"], "{text}");
    }
    assert!(expr("x\n").elements().is_none());
}

#[test]
fn module_body_and_kinds() {
    let file = crate::source::SourceFile::new("t.py", "a\nb\n");
    let root = crate::parse::parse_module(&file).expect("valid");
    assert!(root.is(crate::syntax::kind::MODULE));
    assert_eq!(root.module_body().expect("module").children().len(), 2);
    assert!(one("a\n").module_body().is_none());
}
