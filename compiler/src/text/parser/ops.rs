//! Regions, ops (results, generic form, dispatch to custom forms) and value uses.

use super::{PResult, Parser, new_op};
use crate::CompileError;
use crate::ast::{Loc, Op, Region, ResultGroup, Type, ValueRef};
use crate::text::lexer::{TokKind, Token};

impl Parser<'_> {
    /// `{ ops }` with the given block arguments.
    pub(super) fn region_body(&mut self, args: Vec<(String, Type)>) -> PResult<Region> {
        let open = self.tok().clone();
        self.expect_punct(b'{', "to open a region")?;
        self.enter(&open)?;
        let ops = self.ops_until_close(&open)?;
        self.leave();
        Ok(Region { args, ops })
    }

    /// Ops up to and including the `}` matching `open`.
    fn ops_until_close(&mut self, open: &Token) -> PResult<Vec<Op>> {
        let mut ops = Vec::new();
        loop {
            match self.tok().kind {
                TokKind::Punct(b'}') => {
                    self.bump();
                    return Ok(ops);
                }
                TokKind::Eof => return Err(self.unclosed("region", open)),
                TokKind::Caret => return Err(self.multiple_blocks()),
                _ => self.op(&mut ops)?,
            }
        }
    }

    /// One op: `[results =] (generic | custom) [loc(...)]`, appended to `ops`.
    ///
    /// Ops recurse through regions, so this path keeps its stack frames small: ops are built
    /// in place rather than returned by value, and work that needs many temporaries happens
    /// in helpers that return before the recursion.
    fn op(&mut self, ops: &mut Vec<Op>) -> PResult<()> {
        let first = self.pos;
        let results = if self.tok().kind == TokKind::Value { self.result_names()? } else { Vec::new() };
        let mut op = new_op("", Loc::Unknown);
        self.op_body(&mut op)?;
        self.finish_op(&mut op, results, first)?;
        ops.push(op);
        Ok(())
    }

    /// The op without its result names: generic (quoted name) or custom form (bare name).
    fn op_body(&mut self, op: &mut Op) -> PResult<()> {
        let name_tok = self.tok().clone();
        if !matches!(name_tok.kind, TokKind::Str(_) | TokKind::Ident) {
            return Err(self.unexpected("an operation"));
        }
        self.bump();
        op.loc = self.loc_of(&name_tok);
        match &name_tok.kind {
            TokKind::Str(name) => {
                op.name.clone_from(name);
                self.generic_op(&name_tok, op)
            }
            TokKind::Ident => {
                op.name = self.text(&name_tok).to_string();
                self.custom_op(&name_tok, op)
            }
            _ => Ok(()),
        }
    }

    /// Applies a trailing `loc(...)` and binds the result names (whose first token is at
    /// index `first`), which must match the number of results.
    fn finish_op(&mut self, op: &mut Op, results: Vec<ResultGroup>, first: usize) -> PResult<()> {
        if let Some(loc) = self.trailing_loc()? {
            op.loc = loc;
        }
        let bound: u64 = results.iter().map(|g| u64::from(g.count)).sum();
        if !results.is_empty() && bound != op.result_types.len() as u64 {
            let at = self.toks.get(first).unwrap_or(&self.eof);
            let msg = format!(
                "operation '{}' defines {} result(s) but {bound} name(s) are bound",
                op.name,
                op.result_types.len()
            );
            return Err(self.error_at(at, msg));
        }
        op.results = results;
        Ok(())
    }

    /// `%a, %b:2 =`.
    fn result_names(&mut self) -> PResult<Vec<ResultGroup>> {
        let mut groups = Vec::new();
        loop {
            let tok = self.tok().clone();
            if tok.kind != TokKind::Value {
                return Err(self.unexpected("result name (%name)"));
            }
            self.bump();
            let mut count = 1;
            if self.eat_punct(b':') {
                let n = self.tok().clone();
                count = match (&n.kind, self.text(&n).parse::<u32>()) {
                    (TokKind::Int, Ok(c)) if c > 0 => c,
                    _ => return Err(self.unexpected("a positive result count after ':'")),
                };
                self.bump();
            }
            groups.push(ResultGroup { name: self.sigil_name(&tok), count });
            if !self.eat_punct(b',') {
                break;
            }
        }
        self.expect_punct(b'=', "after the result names")?;
        Ok(groups)
    }

    /// `"name"(%operands) [({regions})] [{attrs}] : (types) -> results`: the generic form.
    fn generic_op(&mut self, name_tok: &Token, op: &mut Op) -> PResult<()> {
        self.generic_operands(name_tok, op)?;
        if self.eat_punct(b'(') {
            loop {
                let region = self.generic_region()?;
                op.regions.push(region);
                if !self.eat_punct(b',') {
                    break;
                }
            }
            self.expect_punct(b')', "after the regions")?;
        }
        self.generic_signature(op)
    }

    /// `(%operands)` after a generic op's name.
    fn generic_operands(&mut self, name_tok: &Token, op: &mut Op) -> PResult<()> {
        if op.name.is_empty() {
            return Err(self.error_at(name_tok, "empty operation name"));
        }
        self.expect_punct(b'(', "after the operation name")?;
        op.operands = self.value_list()?;
        self.expect_punct(b')', "after operands")?;
        if self.at_punct(b'[') {
            return Err(self.error_at(self.tok(), "successor blocks are not supported"));
        }
        Ok(())
    }

    /// `[{attrs}] : (types) -> results` ending a generic op.
    fn generic_signature(&mut self, op: &mut Op) -> PResult<()> {
        if self.at_punct(b'{') {
            op.attrs = self.attr_dict()?;
        }
        self.expect_punct(b':', "followed by the operation's function type")?;
        let types_tok = self.tok().clone();
        let (inputs, outputs) = self.function_type()?;
        self.check_type_count(&types_tok, op.operands.len(), inputs.len())?;
        op.operand_types = inputs;
        op.result_types = outputs;
        Ok(())
    }

    /// A generic-form region: `{ [^bb(%a: T, ...):] ops }`.
    fn generic_region(&mut self) -> PResult<Region> {
        let open = self.tok().clone();
        self.expect_punct(b'{', "to open a region")?;
        self.enter(&open)?;
        let args = self.block_label()?;
        let ops = self.ops_until_close(&open)?;
        self.leave();
        Ok(Region { args, ops })
    }

    /// An optional `^label[(%a: T, ...)]:` giving the block arguments.
    fn block_label(&mut self) -> PResult<Vec<(String, Type)>> {
        if self.tok().kind != TokKind::Caret {
            return Ok(Vec::new());
        }
        self.bump();
        let args = if self.at_punct(b'(') { self.typed_args("block arguments")? } else { Vec::new() };
        self.expect_punct(b':', "after the block label")?;
        Ok(args)
    }

    /// `(%a: T [loc(...)], ...)`: function or block arguments.
    pub(super) fn typed_args(&mut self, what: &str) -> PResult<Vec<(String, Type)>> {
        self.expect_punct(b'(', &format!("to open the {what}"))?;
        let mut args = Vec::new();
        if !self.at_punct(b')') {
            loop {
                let tok = self.tok().clone();
                if tok.kind != TokKind::Value {
                    return Err(self.unexpected("argument name (%name)"));
                }
                self.bump();
                self.expect_punct(b':', "after the argument name")?;
                let ty = self.parse_type()?;
                self.trailing_loc()?;
                args.push((self.sigil_name(&tok), ty));
                if !self.eat_punct(b',') {
                    break;
                }
            }
        }
        self.expect_punct(b')', &format!("after the {what}"))?;
        Ok(args)
    }

    /// "expected '}' to close the `what` opened at L:C" (at end of file).
    pub(super) fn unclosed(&self, what: &str, open: &Token) -> CompileError {
        self.unexpected(&format!("'}}' to close the {what} opened at {}:{}", open.line, open.col))
    }

    fn multiple_blocks(&self) -> CompileError {
        self.error_at(self.tok(), "regions with more than one block are not supported")
    }

    /// `n` types were written for `expected` operands.
    pub(super) fn check_type_count(&self, at: &Token, expected: usize, n: usize) -> PResult<()> {
        if expected == n {
            Ok(())
        } else {
            Err(self.error_at(at, format!("{expected} operand(s) present, but {n} type(s) given")))
        }
    }

    /// `%x` or `%x#N`.
    pub(super) fn value_use(&mut self) -> PResult<ValueRef> {
        let tok = self.tok().clone();
        if tok.kind != TokKind::Value {
            return Err(self.unexpected("SSA value (%name)"));
        }
        self.bump();
        let mut index = None;
        if self.tok().kind == TokKind::Hash {
            let h = self.tok().clone();
            let digits = self.sigil_name(&h);
            if digits.bytes().all(|b| b.is_ascii_digit()) {
                index = Some(digits.parse::<u32>().map_err(|_| self.error_at(&h, "pack index too large"))?);
                self.bump();
            }
        }
        Ok(ValueRef { name: self.sigil_name(&tok), index, loc: self.loc_of(&tok) })
    }

    /// Zero or more comma-separated value uses (stops before anything that is not `%`).
    pub(super) fn value_list(&mut self) -> PResult<Vec<ValueRef>> {
        let mut values = Vec::new();
        if self.tok().kind != TokKind::Value {
            return Ok(values);
        }
        loop {
            values.push(self.value_use()?);
            if !self.eat_punct(b',') {
                return Ok(values);
            }
        }
    }

    /// `(%a, ...)`.
    pub(super) fn paren_value_list(&mut self, what: &str) -> PResult<Vec<ValueRef>> {
        self.expect_punct(b'(', &format!("to open {what}"))?;
        let values = self.value_list()?;
        self.expect_punct(b')', &format!("after {what}"))?;
        Ok(values)
    }
}
