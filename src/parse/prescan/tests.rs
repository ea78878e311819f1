use super::*;

fn scan(text: &str) -> Result<(), Rejected> {
    check(&SourceFile::new("t.py", text))
}

fn refused(text: &str) -> String {
    scan(text).expect_err("refused").message
}

#[test]
fn chains_deeper_than_the_limit_are_refused() {
    let n = MAX_NESTING + 10;
    let cases = [
        format!("Z = {}1\n", "-".repeat(n)),
        format!("Z = a{}\n", ".b".repeat(n)),
        format!("Z = {}1\n", "not ".repeat(n)),
        format!("Z = {}1\n", "lambda: ".repeat(n)),
        format!("Z = 1{}\n", "**1".repeat(n)),
        format!("Z = 2{}\n", "**-2".repeat(n)),
        format!("Z = a{}\n", "()".repeat(n)),
        format!("Z = 1{}\n", " if 1 else 1".repeat(n)),
        format!("Z = 1{}\n", "+1".repeat(n)),
        format!("Z = {}x\n", "lambda a, b=1: ".repeat(n)),
        format!("if x:\n pass\n{}", "elif x:\n pass\n".repeat(n)),
        format!("if x:\n pass\n{}", "elif x:\n if y: pass\n".repeat(n)),
        format!("Z = f'{{{}1}}'\n", "-".repeat(n)),
        format!("Z = f'{{x:{}{}}}'\n", "{x:".repeat(n), "}".repeat(n)),
    ];
    for text in cases {
        let message = scan(&text).map_err(|r| r.message).expect_err(&text[..40]);
        assert!(message.contains("too deeply nested"), "{message}");
    }
}

#[test]
fn closed_brackets_count_as_deep_operands() {
    // 200 brackets, each holding a chain of 1,000 attributes: 200,000 levels in all.
    let mut text = String::from("x = ");
    text.push_str(&"(".repeat(200));
    text.push('a');
    for _ in 0..200 {
        text.push_str(&".b".repeat(1000));
        text.push(')');
    }
    assert!(refused(&text).contains("too deeply nested"));
}

#[test]
fn brackets_and_indentation_follow_cpython_limits() {
    let ok = format!("x = {}1{}\n", "(".repeat(200), ")".repeat(200));
    assert_eq!(scan(&ok), Ok(()));
    for open in ["(", "[", "{"] {
        let text = format!("x = {}\n", open.repeat(201));
        assert_eq!(refused(&text), "too many nested parentheses");
    }
    let err = scan(&format!("x = {}\n", "[".repeat(1_000_000))).unwrap_err();
    assert_eq!(err.offset, 4 + 200);
    let block = |levels: usize| {
        (0..levels)
            .map(|i| format!("{}if x:\n", " ".repeat(i)))
            .collect::<String>()
            + &" ".repeat(levels)
            + "pass\n"
    };
    assert_eq!(scan(&block(98)), Ok(()));
    assert_eq!(refused(&block(100)), "too many levels of indentation");
}

#[test]
fn nul_bytes_are_refused_where_they_are() {
    let err = scan("x = 'a\0b'\n").unwrap_err();
    assert_eq!(
        err,
        Rejected {
            offset: 6,
            message: "source code cannot contain null bytes".into()
        }
    );
}

#[test]
fn flat_code_of_any_length_passes() {
    let n = 300_000;
    for text in [
        format!("x = [{}]\n", "1, ".repeat(n)),
        format!("x = 1{}\n", " and 1".repeat(n)),
        format!("x = 1{}\n", " < 1".repeat(n)),
        format!("x = {{{}}}\n", "1: -2, ".repeat(n)),
        format!("x = f(a=1{})\n", ", a=-b.c".repeat(n)),
        "x = 1\n".repeat(n),
        format!("s = '{}'\n", "(-.".repeat(n)),
        format!("s = '''{}'''\n", "((\n".repeat(n)),
        format!("s = f'{{x:>{{w}}}}{}'\n", "{{((".repeat(n)),
        format!("# {}\n", "(".repeat(n)),
        format!("x = 1e-5{}\n", "+1e-5".repeat(1000)),
    ] {
        assert_eq!(scan(&text), Ok(()), "{}", &text[..60]);
    }
}

/// CPython compiles chains up to about 3,000 deep: the estimate must let them through.
#[test]
fn what_cpython_compiles_passes() {
    let n = 2990;
    for text in [
        format!("x = {}1\n", "-".repeat(n)),
        format!("x = a{}\n", ".b".repeat(n)),
        format!("x = 1{}\n", "*1+1".repeat(n)),
        format!("x = -a{}\n", "|-b^-c&-d<<-e+-f*-g**-h".repeat(n)),
        format!("x = {}1\n", "lambda a, b=(1, 2): ".repeat(n)),
        format!("match x:\n    case {}:\n        pass\n", vec!["1"; 50_000].join("|")),
        format!(
            "x = {}\n",
            (0..n)
                .map(|i| format!("a{i}[{i}:{i}:-{i}]"))
                .collect::<Vec<_>>()
                .join(" + ")
        ),
    ] {
        assert_eq!(scan(&text), Ok(()), "{}", &text[..60]);
    }
}
