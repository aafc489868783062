//! The custom op forms (the table is [`crate::text::forms`]), each normalised to a plain
//! [`Op`] with its operand types, result types, attributes and regions filled in.

use super::{PResult, Parser, arg_name, new_op};
use crate::CompileError;
use crate::ast::{Attr, NamedAttr, Op, Region, Type, ValueRef};
use crate::text::forms::{self, BENCHMARK_KEYS, CHAIN, Form};
use crate::text::lexer::{TokKind, Token};

fn ty(s: &str) -> Type {
    Type(s.to_string())
}

fn named(name: &str, value: Attr) -> NamedAttr {
    NamedAttr { name: name.to_string(), value }
}

/// Region arguments named after `values`, typed `types`.
fn region_args(values: &[ValueRef], types: &[Type]) -> Vec<(String, Type)> {
    values.iter().map(arg_name).zip(types.iter().cloned()).collect()
}

impl Parser<'_> {
    /// Parses the rest of a custom form whose name token (`name_tok`) was just consumed.
    /// (On the recursive path through regions: kept small, see `Parser::op`.)
    pub(super) fn custom_op(&mut self, name_tok: &Token, op: &mut Op) -> PResult<()> {
        if self.simple_op(op)? { Ok(()) } else { self.structured_op(name_tok, op) }
    }

    /// The forms without types lists or regions; `false` if `op.name` is none of them.
    fn simple_op(&mut self, op: &mut Op) -> PResult<bool> {
        let name = op.name.clone();
        match forms::form(&name) {
            Some(Form::Implied { operands, results }) => {
                self.implied_operands(op, operands.len())?;
                op.operand_types = operands.iter().map(|t| ty(t)).collect();
                op.result_types = results.iter().map(|t| ty(t)).collect();
            }
            Some(Form::Constant(t)) => {
                op.attrs = vec![named("value", self.constant_value(t)?)];
                op.result_types = vec![ty(t)];
            }
            Some(Form::Valued { operands, results, attr, array }) => {
                self.implied_operands(op, operands.len())?;
                let value = if array {
                    if !self.at_punct(b'[') {
                        return Err(self.unexpected(&format!("'[' to open the array '{attr}'")));
                    }
                    Attr::Array(self.attr_array()?)
                } else {
                    self.attr_value()?
                };
                op.attrs = vec![named(attr, value)];
                op.operand_types = operands.iter().map(|t| ty(t)).collect();
                op.result_types = results.iter().map(|t| ty(t)).collect();
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The forms with calls, types lists or regions.
    fn structured_op(&mut self, name_tok: &Token, op: &mut Op) -> PResult<()> {
        // A function table rather than a `match` of calls keeps this frame small.
        let form: fn(&mut Self, &mut Op) -> PResult<()> = match forms::form(&op.name) {
            Some(Form::MergeChains) => Self::merge_chains,
            Some(Form::Return) => Self::return_op,
            Some(Form::Call) => |p, op| p.call_like(op, "callee"),
            Some(Form::Once) => |p, op| p.call_like(op, "function"),
            Some(Form::If) => Self::if_op,
            Some(Form::Repeat) => Self::repeat,
            Some(Form::Cond) => Self::cond,
            Some(Form::Case) => Self::case,
            Some(Form::While) => Self::while_op,
            Some(Form::ParallelFor) => Self::parallel_for,
            Some(Form::ParallelCall) => Self::parallel_call,
            Some(Form::DoAsync) => Self::do_async,
            Some(Form::Benchmark) => Self::benchmark,
            Some(Form::TestCost) => Self::test_cost,
            _ => return Err(self.unknown_form(name_tok)),
        };
        form(self, op)
    }

    fn unknown_form(&self, name_tok: &Token) -> CompileError {
        let name = self.text(name_tok);
        if name.contains('.') {
            let msg = format!(
                "unknown custom op form '{name}' (write other ops in generic form: \"{name}\"(...) : (...) -> (...))"
            );
            self.error_at(name_tok, msg)
        } else {
            self.error_at(name_tok, format!("expected an operation, found '{name}'"))
        }
    }

    /// The literal of `tfrt.constant.T`: `[-] NUMBER`, or `true` / `false` for `i1`.
    fn constant_value(&mut self, t: &str) -> PResult<Attr> {
        if self.at_keyword("true") || self.at_keyword("false") {
            if t != "i1" {
                return Err(self.error_at(self.tok(), format!("boolean literal is not valid for type '{t}'")));
            }
            return Ok(Attr::Bool(self.bump().text(self.src) == "true"));
        }
        let (neg, lit) = self.number_literal()?;
        self.number_attr(neg, &lit, Some(ty(t)))
    }

    /// The `n` comma-separated operands of an implied-types form (`%a, %b` for the binary
    /// ones, `%a` for `tfrt_test.count3.T`, none for `tfrt.new.chain` or `ts.build_shape`).
    fn implied_operands(&mut self, op: &mut Op, n: usize) -> PResult<()> {
        op.operands = Vec::with_capacity(n);
        for i in 0..n {
            if i > 0 {
                self.expect_punct(b',', "between the two operands")?;
            }
            op.operands.push(self.value_use()?);
        }
        Ok(())
    }

    /// `%a, ... : T, ...` with as many types as values.
    fn values_colon_types(&mut self, op: &mut Op) -> PResult<()> {
        op.operands = self.value_list()?;
        self.expect_punct(b':', "followed by the operand types")?;
        let at = self.tok().clone();
        op.operand_types = self.type_list()?;
        self.check_type_count(&at, op.operands.len(), op.operand_types.len())
    }

    fn merge_chains(&mut self, op: &mut Op) -> PResult<()> {
        if self.tok().kind != TokKind::Value {
            return Err(self.unexpected("SSA value (%name) to merge"));
        }
        self.values_colon_types(op)?;
        op.result_types = vec![ty(CHAIN)];
        Ok(())
    }

    fn return_op(&mut self, op: &mut Op) -> PResult<()> {
        if self.tok().kind == TokKind::Value {
            self.values_colon_types(op)?;
        }
        Ok(())
    }

    /// `@f(%a, ...) : (T, ...) -> R` with the symbol stored as `attr`.
    fn call_like(&mut self, op: &mut Op, attr: &str) -> PResult<()> {
        let callee = self.symbol("callee")?;
        op.operands = self.paren_value_list("the call arguments")?;
        self.signature(op)?;
        op.attrs = vec![named(attr, callee)];
        Ok(())
    }

    /// `@name` as an attribute.
    fn symbol(&mut self, what: &str) -> PResult<Attr> {
        match &self.tok().kind {
            TokKind::Symbol(s) => {
                let attr = Attr::Symbol(s.clone());
                self.bump();
                Ok(attr)
            }
            _ => Err(self.unexpected(&format!("{what} (@name)"))),
        }
    }

    /// `: (T...) -> R` for the operands after the first `implied.len()`, whose types are
    /// `implied`; fills operand and result types.
    fn signature_after(&mut self, op: &mut Op, implied: &[&str]) -> PResult<()> {
        self.expect_punct(b':', "followed by the function type")?;
        let at = self.tok().clone();
        let (inputs, outputs) = self.function_type()?;
        let listed = op.operands.len().saturating_sub(implied.len());
        self.check_type_count(&at, listed, inputs.len())?;
        op.operand_types = implied.iter().map(|t| ty(t)).chain(inputs).collect();
        op.result_types = outputs;
        Ok(())
    }

    fn signature(&mut self, op: &mut Op) -> PResult<()> {
        self.signature_after(op, &[])
    }

    /// `%c, %a... [attributes {...}] : (T...) -> R { then } [else { else }]`.
    fn if_op(&mut self, op: &mut Op) -> PResult<()> {
        let args = self.if_header(op)?;
        self.push_region(op, args.clone())?;
        if self.eat_keyword("else") { self.push_region(op, args) } else { self.implicit_else(op, args) }
    }

    /// The else region of a `tfrt.if` without `else`: just `tfrt.return`.
    fn implicit_else(&self, op: &mut Op, args: Vec<(String, Type)>) -> PResult<()> {
        if !op.result_types.is_empty() {
            return Err(self.error_at(self.tok(), "expected 'else' in 'tfrt.if' with result values"));
        }
        op.regions.push(Region { args, ops: vec![new_op("tfrt.return", op.loc.clone())] });
        Ok(())
    }

    /// Parses `{ ops }` (the regions are on the recursive path: see `Parser::op`).
    fn push_region(&mut self, op: &mut Op, args: Vec<(String, Type)>) -> PResult<()> {
        let region = self.region_body(args)?;
        op.regions.push(region);
        Ok(())
    }

    /// `tfrt.if` up to its regions; returns the regions' block arguments.
    fn if_header(&mut self, op: &mut Op) -> PResult<Vec<(String, Type)>> {
        op.operands = self.value_list()?;
        if op.operands.is_empty() {
            return Err(self.unexpected("condition (%name) after 'tfrt.if'"));
        }
        if self.eat_keyword("attributes") {
            op.attrs = self.attr_dict()?;
        }
        self.signature_after(op, &["i1"])?;
        Ok(region_args(op.operands.get(1..).unwrap_or(&[]), op.operand_types.get(1..).unwrap_or(&[])))
    }

    /// `%n, %a... [: T...] { body }`.
    fn repeat(&mut self, op: &mut Op) -> PResult<()> {
        let args = self.repeat_header(op)?;
        self.push_region(op, args)
    }

    fn repeat_header(&mut self, op: &mut Op) -> PResult<Vec<(String, Type)>> {
        op.operands = self.value_list()?;
        if op.operands.is_empty() {
            return Err(self.unexpected("iteration count (%name) after 'tfrt.repeat.i32'"));
        }
        let mut types = Vec::new();
        if op.operands.len() > 1 {
            self.expect_punct(b':', "followed by the loop value types")?;
            let at = self.tok().clone();
            types = self.type_list()?;
            self.check_type_count(&at, op.operands.len() - 1, types.len())?;
        }
        let args = region_args(op.operands.get(1..).unwrap_or(&[]), &types);
        op.operand_types = std::iter::once(ty("i32")).chain(types.iter().cloned()).collect();
        op.result_types = types;
        Ok(args)
    }

    /// `%c @t @f (%a...) : (T...) -> (R...)`.
    fn cond(&mut self, op: &mut Op) -> PResult<()> {
        let c = self.value_use()?;
        let t = self.symbol("the true function")?;
        let f = self.symbol("the false function")?;
        op.operands = std::iter::once(c).chain(self.paren_value_list("the arguments")?).collect();
        self.signature_after(op, &["i1"])?;
        op.attrs = vec![named("a_true_fn", t), named("b_false_fn", f)];
        Ok(())
    }

    /// `%i [@f0, ...] (%a...) : (T...) -> (R...)`.
    fn case(&mut self, op: &mut Op) -> PResult<()> {
        let i = self.value_use()?;
        self.expect_punct(b'[', "to open the branch list")?;
        let mut branches = Vec::new();
        if !self.at_punct(b']') {
            loop {
                branches.push(self.symbol("a branch function")?);
                if !self.eat_punct(b',') {
                    break;
                }
            }
        }
        self.expect_punct(b']', "to close the branch list")?;
        op.operands = std::iter::once(i).chain(self.paren_value_list("the arguments")?).collect();
        self.signature_after(op, &["i32"])?;
        op.attrs = vec![named("branches", Attr::Array(branches))];
        Ok(())
    }

    /// `%c @body(%a...) [parallel_iterations(N)] : (T...) -> (T...)`.
    fn while_op(&mut self, op: &mut Op) -> PResult<()> {
        let c = self.value_use()?;
        let body = self.symbol("the body function")?;
        op.operands = std::iter::once(c).chain(self.paren_value_list("the loop values")?).collect();
        let mut iterations = 1;
        if self.eat_keyword("parallel_iterations") {
            self.expect_punct(b'(', "after 'parallel_iterations'")?;
            let (neg, lit) = self.number_literal()?;
            iterations = match self.number_attr(neg, &lit, Some(ty("i64")))? {
                Attr::Int { value, .. } => value,
                _ => 1,
            };
            self.expect_punct(b')', "after the parallel iteration count")?;
        }
        self.signature_after(op, &["i1"])?;
        op.attrs = vec![
            named("body_fn", body),
            named("parallel_iterations", Attr::Int { value: iterations, ty: ty("i64") }),
        ];
        Ok(())
    }

    /// `%s to %e fixed %b`: the three i32 operands of the parallel forms.
    fn parallel_range(&mut self, op: &mut Op) -> PResult<()> {
        let s = self.value_use()?;
        self.expect_keyword("to", "after the start value")?;
        let e = self.value_use()?;
        self.expect_keyword("fixed", "after the end value")?;
        let b = self.value_use()?;
        op.operands = vec![s, e, b];
        op.result_types = vec![ty(CHAIN)];
        Ok(())
    }

    /// Types of the extra operands after the three range operands: `: T...` (required when
    /// there are extra operands, absent otherwise).
    fn parallel_types(&mut self, op: &mut Op) -> PResult<Vec<Type>> {
        let extra = op.operands.len().saturating_sub(3);
        let mut types = Vec::new();
        if extra > 0 {
            self.expect_punct(b':', "followed by the argument types")?;
            let at = self.tok().clone();
            types = self.type_list()?;
            self.check_type_count(&at, extra, types.len())?;
        }
        op.operand_types = vec![ty("i32"); 3];
        op.operand_types.extend(types.iter().cloned());
        Ok(types)
    }

    /// `%s to %e fixed %b [, %a... : T...] { body }` (block args: s, e, a...).
    fn parallel_for(&mut self, op: &mut Op) -> PResult<()> {
        let args = self.parallel_for_header(op)?;
        self.push_region(op, args)
    }

    fn parallel_for_header(&mut self, op: &mut Op) -> PResult<Vec<(String, Type)>> {
        self.parallel_range(op)?;
        if self.eat_punct(b',') {
            op.operands.extend(self.value_list_nonempty()?);
        }
        let types = self.parallel_types(op)?;
        let mut args = region_args(op.operands.get(..2).unwrap_or(&[]), &[ty("i32"), ty("i32")]);
        args.extend(region_args(op.operands.get(3..).unwrap_or(&[]), &types));
        Ok(args)
    }

    /// `%s to %e fixed %b @f(%a...) [: T...]`.
    fn parallel_call(&mut self, op: &mut Op) -> PResult<()> {
        self.parallel_range(op)?;
        let callee = self.symbol("the body function")?;
        let args = self.paren_value_list("the arguments")?;
        op.operands.extend(args);
        self.parallel_types(op)?;
        op.attrs = vec![named("callee", callee)];
        Ok(())
    }

    /// At least one value: `%a, ...`.
    fn value_list_nonempty(&mut self) -> PResult<Vec<ValueRef>> {
        if self.tok().kind != TokKind::Value {
            return Err(self.unexpected("SSA value (%name)"));
        }
        self.value_list()
    }

    /// `%a... [attributes {...}] : (T...) -> (R...) { body }`.
    fn do_async(&mut self, op: &mut Op) -> PResult<()> {
        let args = self.do_async_header(op)?;
        self.push_region(op, args)
    }

    fn do_async_header(&mut self, op: &mut Op) -> PResult<Vec<(String, Type)>> {
        op.operands = self.value_list()?;
        if self.eat_keyword("attributes") {
            op.attrs = self.attr_dict()?;
        }
        self.signature(op)?;
        Ok(region_args(&op.operands, &op.operand_types))
    }

    /// `"NAME"(%a : T, ...) key = INT, ... { body }`.
    fn benchmark(&mut self, op: &mut Op) -> PResult<()> {
        let args = self.benchmark_header(op)?;
        self.push_region(op, args)
    }

    fn benchmark_header(&mut self, op: &mut Op) -> PResult<Vec<(String, Type)>> {
        let name = match &self.tok().kind {
            TokKind::Str(s) => s.clone(),
            _ => return Err(self.unexpected("benchmark name (a string)")),
        };
        self.bump();
        self.expect_punct(b'(', "to open the benchmark arguments")?;
        if !self.at_punct(b')') {
            loop {
                op.operands.push(self.value_use()?);
                self.expect_punct(b':', "after the benchmark argument")?;
                op.operand_types.push(self.parse_type()?);
                if !self.eat_punct(b',') {
                    break;
                }
            }
        }
        self.expect_punct(b')', "after the benchmark arguments")?;
        let mut values: [Option<i64>; 3] = [None, None, Some(1)];
        let mut seen = [false; 3];
        loop {
            let key_tok = self.tok().clone();
            let key = self.text(&key_tok);
            let Some(k) =
                BENCHMARK_KEYS.iter().position(|k| *k == key).filter(|_| key_tok.kind == TokKind::Ident)
            else {
                return Err(self.unexpected("benchmark option (duration_secs, max_count or num_warmup_runs)"));
            };
            if seen[k] {
                return Err(
                    self.error_at(&key_tok, format!("duplicate benchmark option '{}'", BENCHMARK_KEYS[k]))
                );
            }
            seen[k] = true;
            self.bump();
            self.expect_punct(b'=', "after the benchmark option name")?;
            let (neg, lit) = self.number_literal()?;
            if lit.kind != TokKind::Int {
                return Err(self.error_at(&lit, "expected an integer benchmark option value"));
            }
            if let Attr::Int { value, .. } = self.number_attr(neg, &lit, Some(ty("i32")))? {
                values[k] = Some(value);
            }
            if !self.eat_punct(b',') {
                break;
            }
        }
        op.attrs = vec![named("name", Attr::String(name))];
        for (key, value) in BENCHMARK_KEYS.iter().zip(values) {
            let Some(value) = value else {
                return Err(self.error_at(self.tok(), format!("missing required benchmark option '{key}'")));
            };
            op.attrs.push(named(key, Attr::Int { value, ty: ty("i32") }));
        }
        op.result_types = vec![ty(CHAIN)];
        Ok(region_args(&op.operands, &op.operand_types))
    }

    /// `%a... [{attrs}] [: T...]` (types required when there are operands).
    fn test_cost(&mut self, op: &mut Op) -> PResult<()> {
        op.operands = self.value_list()?;
        if self.at_punct(b'{') {
            op.attrs = self.attr_dict()?;
        }
        if !op.operands.is_empty() || self.at_punct(b':') {
            self.expect_punct(b':', "followed by the operand types")?;
            let at = self.tok().clone();
            op.operand_types = if op.operands.is_empty() { Vec::new() } else { self.type_list()? };
            self.check_type_count(&at, op.operands.len(), op.operand_types.len())?;
        }
        op.result_types = vec![ty("i32")];
        Ok(())
    }
}
